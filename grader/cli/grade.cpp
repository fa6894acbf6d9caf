// grader grade: score submissions in a pristine course tree, sandboxed, and always write the
// result file. Only a module's student files are taken from a submission; tests, headers and
// build files come from the course. Prerequisites are the reference solutions, built beforehand
// and linked as archives, so a submission's build never sees a solution's source.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "kiln/grader/commands.h"
#include "kiln/grader/cuda.h"
#include "kiln/grader/sandbox.h"

namespace kiln::grader {

namespace {

struct Submission {
  std::string name;  // folder name, made safe for paths and target names
  fs::path path;
};

std::string safe_name(const std::string& name, std::size_t index) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return fmt::format("{:04d}_{}", index, out.substr(0, 40));
}

// Where a submission keeps one student file: as in the course (modules/NN_slug/src/x.cpp), as in
// the module folder (NN_slug/src/x.cpp or src/x.cpp), or flat (x.cpp, as Gradescope uploads).
std::optional<fs::path> find_submitted(const fs::path& submission, const Module& m, const std::string& file) {
  const fs::path rel(file);
  for (const fs::path& candidate : {submission / "modules" / m.name() / rel, submission / m.name() / rel,
                                    submission / rel, submission / rel.filename()}) {
    std::error_code ec;
    const auto status = fs::symlink_status(candidate, ec);  // a link could point at anything: refuse it
    if (!ec && fs::is_regular_file(status)) return candidate;
  }
  return std::nullopt;
}

constexpr std::uintmax_t kMaxSubmittedFile = 1 << 20;

// Copies the module's student files from the submission into `stage`; a file that is missing,
// a link or too large is replaced by the course's stub and noted.
std::vector<std::string> stage_submission(const Submission& s, const Module& m, const fs::path& stage) {
  std::vector<std::string> notes;
  for (const auto& f : m.student_files) {
    const auto found = find_submitted(s.path, m, f);
    std::string content;
    if (!found) {
      notes.push_back(fmt::format("{} was not in the submission: graded as the unwritten stub", f));
      content = read_file(m.dir / f);
    } else if (fs::file_size(*found) > kMaxSubmittedFile) {
      notes.push_back(fmt::format("{} is larger than 1 MiB: graded as the unwritten stub", f));
      content = read_file(m.dir / f);
    } else {
      content = read_file(*found);
    }
    write_if_changed(stage / f, content);
  }
  return notes;
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
    for (const auto& e : fs::directory_iterator(cmd.batch))
      if (e.is_directory()) dirs.push_back(fs::absolute(e.path()));
    std::sort(dirs.begin(), dirs.end());
    for (std::size_t i = 0; i < dirs.size(); ++i) submissions.push_back({safe_name(dirs[i].filename().string(), i), dirs[i]});
  }

  const auto started = std::chrono::steady_clock::now();
  const fs::path reference_dir = ws.build_dir("check");
  const fs::path grade_dir = ws.build_dir("grade");
  const fs::path scratch_root = ws.state_dir() / "scratch";
  std::vector<std::vector<Report>> reports(submissions.size());
  std::vector<std::vector<std::string>> notes(submissions.size());

  for (const Module* m : modules) {
    // 1. Trusted: the prerequisites' reference libraries, and this module's tests and given code.
    BuildResult trusted;
    CourseBuild reference(ws.course, reference_dir, ws.kiln_home);
    std::vector<std::string> libraries;
    for (const Module* dep : ws.course.prerequisites(*m)) libraries.push_back(CourseBuild::library_target(*dep, "solution"));
    if (!libraries.empty() && !reference.build_named(standard_targets(ws.course), libraries, trusted))
      throw CourseError("the reference solutions of the prerequisites do not build:\n" + trusted.log);

    std::vector<TestTarget> targets;
    for (std::size_t i = 0; i < submissions.size(); ++i) {
      const fs::path stage = grade_dir / "submissions" / submissions[i].name / m->name();
      for (const auto& note : stage_submission(submissions[i], *m, stage))
        notes[i].push_back(fmt::format("{}: {}", m->number_text(), note));
      targets.push_back({.module = m, .own = {"sub" + submissions[i].name.substr(0, 4), stage},
                         .base_name = "solution", .base_root = ws.course.root / "solutions",
                         .prebuilt_base = reference_dir});
    }
    CourseBuild build(ws.course, grade_dir, ws.kiln_home);
    std::vector<std::string> shared = {"kiln_testing_main", "m_" + m->name() + "_tests"};
    if (!m->given_sources().empty()) shared.push_back("m_" + m->name() + "_given");
    if (!build.build_named(targets, shared, trusted))
      throw CourseError("the course's own tests for module " + m->number_text() + " do not build:\n" + trusted.log);

    // 2. Sandboxed: compile the submissions' files and link, with every solution out of sight.
    SandboxSpec compile;
    compile.mounts = {{Mount::read_only, ws.kiln_home}, {Mount::read_only, ws.course.root},
                      {Mount::hidden, ws.kiln_home / "solutions"}, {Mount::hidden, ws.course.root / "solutions"},
                      {Mount::hidden, ws.state_dir()}, {Mount::read_only, reference_dir},
                      {Mount::writable, grade_dir}};
    if (!build.nvcc().empty()) compile.mounts.push_back({Mount::read_only, cuda_toolkit_dir(build.nvcc())});
    const auto built = build.build_many(targets, targets, cmd.no_sandbox ? std::vector<std::string>{}
                                                                          : sandbox_prefix(compile));

    // 3. Sandboxed, unprivileged: run each submission's checks with only its binary and a scratch folder.
    std::atomic<std::size_t> next{0};
    std::mutex done;
    auto worker = [&](int slot) {
      const int uid = kSandboxUid + slot;
      for (std::size_t i; (i = next++) < submissions.size();) {
        Report report;
        try {
          GradeOptions options;
          options.run.limits = default_limits();
          options.run.limits.processes = 64;
          options.run.limits.memory_bytes = std::size_t(2) << 30;
          if (!built[i].ok) {
            std::vector<const Check*> checks;
            for (const auto& c : m->checks) checks.push_back(&c);
            report = make_report(ws.course, *m, checks, built[i], nullptr, "submission");
          } else {
            const fs::path scratch = scratch_root / submissions[i].name;
            fs::remove_all(scratch);
            fs::create_directories(scratch);
            if (geteuid() == 0) {
              if (chown(scratch.c_str(), uid, uid) != 0)
                throw CourseError("cannot hand the scratch folder to the sandbox user");
            }
            SandboxSpec run;
            run.mounts = {{Mount::read_only, ws.kiln_home}, {Mount::read_only, ws.course.root},
                          {Mount::hidden, ws.kiln_home / "solutions"}, {Mount::hidden, ws.course.root / "solutions"},
                          {Mount::hidden, ws.state_dir()}, {Mount::read_only, built[i].binary},
                          {Mount::writable, scratch}};
            if (!built[i].device_binary.empty()) {
              run.mounts.push_back({Mount::read_only, built[i].device_binary});
              for (const auto& node : cuda_device_nodes()) run.mounts.push_back({Mount::device, node});
            }
            run.workdir = scratch;
            run.uid = uid;
            if (!cmd.no_sandbox) options.run.launcher = sandbox_prefix(run);
            std::vector<const Check*> checks;
            for (const auto& c : m->checks) checks.push_back(&c);
            const RunResult result = run_built_checks(built[i], checks, options.run);
            report = make_report(ws.course, *m, checks, built[i], &result, "submission");
            fs::remove_all(scratch);
          }
        } catch (const std::exception& e) {
          report = failed_report(ws.course, *m, std::string("the grader could not grade this submission: ") + e.what());
        }
        std::lock_guard lock(done);
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
  std::fprintf(stderr, "graded %zu submissions in %.1f s (%.1f per minute); results in %s\n", submissions.size(),
               seconds, seconds > 0 ? 60.0 * submissions.size() / seconds : 0.0, out.string().c_str());
  return 0;
}

}  // namespace kiln::grader
