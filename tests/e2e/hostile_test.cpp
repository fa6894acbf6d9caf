// The hostile submissions in tests/hostile/, graded in one batch through the sandbox. Each plants
// one attack in add(); the other four functions are right, so every other check must still score.
// The grader must survive all of them, and nothing outside its scratch folder may change.
#include <arpa/inet.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/build.h"
#include "kiln/grader/process.h"
#include "kiln/grader/sandbox.h"

namespace kiln::grader {
namespace {

// Every file under root except the grader's own state, with its content.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == ".grader" || it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink()) out[fs::relative(it->path(), root).string()] = "-> " + fs::read_symlink(it->path()).string();
    else if (it->is_regular_file()) out[fs::relative(it->path(), root).string()] = read_file(it->path());
  }
  return out;
}

// Counts connections to a loopback port while the submissions run.
class Listener {
 public:
  explicit Listener(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(static_cast<uint16_t>(port));
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listening_ = bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0 && listen(fd_, 8) == 0;
    thread_ = std::thread([this] {
      while (!stop_) {
        timeval wait{0, 100000};
        fd_set set;
        FD_ZERO(&set);
        FD_SET(fd_, &set);
        if (select(fd_ + 1, &set, nullptr, nullptr, &wait) > 0) {
          const int c = accept(fd_, nullptr, nullptr);
          if (c >= 0) ++accepted_, close(c);
        }
      }
    });
  }
  ~Listener() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  bool listening() const { return listening_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1;
  bool listening_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

TEST(Hostile, EverySubmissionIsGradedAsItShouldBeAndNothingEscapes) {
  const fs::path root = fs::temp_directory_path() / ("kiln-hostile-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  fs::copy(fs::path(KILN_FIXTURES) / "probe", root / "course", fs::copy_options::recursive);
  fs::copy(fs::path(KILN_HOSTILE), root / "submissions", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  // The course is a git checkout, as an instructor's is: its history holds every solution.
  for (const std::vector<std::string>& git : {std::vector<std::string>{"init", "-q"}, {"add", "-A"},
                                              {"-c", "user.name=k", "-c", "user.email=k@k", "commit", "-qm", "course"}}) {
    std::vector<std::string> argv = {"git", "-C", (root / "course").string()};
    argv.insert(argv.end(), git.begin(), git.end());
    ASSERT_TRUE(run_process({.argv = argv}).ok());
  }
  const auto before = snapshot(root / "course");
  const auto submissions_before = snapshot(root / "submissions");
  fs::remove("/tmp/kiln-hostile-was-here");
  // A key in the grader's session keyring, which the sandbox inherits: no submission may read it.
  const long key = syscall(SYS_add_key, "user", "kiln-hostile-key", "s3cr3t-k3y-text", 15, KEY_SPEC_SESSION_KEYRING);

  Listener listener(47123);
  ASSERT_TRUE(listener.listening()) << "the test needs loopback port 47123";
  const ProcessResult r = run_process(
      {.argv = {KILN_GRADER, "--root", (root / "course").string(), "grade", "--batch", (root / "submissions").string(),
                "--module", "1", "--format", "json", "--out", (root / "results").string(), "-j", "2",
                "--compile-timeout", "10"},
       .env = {{"KILN_HOME", KILN_HOME_DIR}, {"KILN_HOSTILE_SECRET", "s3cr3t-t0ken"}},
       .output_cap = 1 << 20});
  ASSERT_EQ(r.exit_code, 0) << "the grader survives every submission\n" << r.out << r.err;

  int cases = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_HOSTILE))) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ++cases;
    const auto expect = nlohmann::json::parse(read_file(entry.path() / "expect.json"));
    const fs::path result_file = root / "results" / (name + ".json");
    ASSERT_TRUE(fs::exists(result_file)) << "a result file is always written";
    const std::string text = read_file(result_file);
    const auto result = nlohmann::json::parse(text);
    EXPECT_EQ(result["score"], expect["score"]) << result.dump(2);
    for (const auto& needle : expect.value("must_not_contain", nlohmann::json::array()))
      EXPECT_EQ(text.find(needle.get<std::string>()), std::string::npos) << "the result quotes " << needle;
    if (expect.contains("max_result_bytes")) EXPECT_LE(text.size(), expect["max_result_bytes"].get<std::size_t>());
    if (expect.contains("summary_contains"))
      EXPECT_NE(result["checks"][0]["summary"].get<std::string>().find(expect["summary_contains"].get<std::string>()),
                std::string::npos) << result["checks"][0].dump();
    // An expected status, or a list of acceptable ones (a machine under load may time out first).
    for (const auto& check : result["checks"]) {
      const std::string id = check["id"];
      auto want = expect["statuses"].value(id, nlohmann::json("passed"));
      if (!want.is_array()) want = nlohmann::json::array({want});
      EXPECT_NE(std::find(want.begin(), want.end(), check["status"]), want.end())
          << id << ": expected " << want.dump() << ", got " << check.dump();
    }
  }
  EXPECT_GE(cases, 31);
  if (key >= 0) syscall(SYS_keyctl, KEYCTL_INVALIDATE, key);
  // A submission is over when its grading is: no process of the sandbox users outlives it, and
  // nothing of the submissions stays staged.
  if (geteuid() == 0) {
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string status = read_file(entry.path() / "status");
      const auto at = status.find("\nUid:\t");
      if (at == std::string::npos) continue;
      // A zombie runs nothing and holds nothing: whoever inherited it reaps it in its own time.
      if (status.find("\nState:\tZ") != std::string::npos || status.find("\nState:\tX") != std::string::npos) continue;
      const int uid = std::atoi(status.c_str() + at + 6);
      EXPECT_FALSE(uid >= kSandboxUid && uid < kSandboxUid + kSandboxUids)
          << "a process of the sandbox user " << uid << " is still alive";
    }
  }
  const fs::path staged = root / "course" / ".grader" / "grade";
  if (fs::exists(staged))
    for (const auto& entry : fs::recursive_directory_iterator(staged))
      EXPECT_FALSE(entry.is_regular_file()) << entry.path() << " was left behind";
  EXPECT_EQ(listener.accepted(), 0) << "no submission reached the network";
  EXPECT_EQ(snapshot(root / "course"), before) << "the course tree is unchanged";
  EXPECT_EQ(snapshot(root / "submissions"), submissions_before) << "the submissions are unchanged";
  EXPECT_FALSE(fs::exists("/tmp/kiln-hostile-was-here")) << "nothing was written outside the scratch folder";
  const std::string gradebook = read_file(root / "results" / "gradebook.csv");
  EXPECT_EQ(std::count(gradebook.begin(), gradebook.end(), '\n'), cases + 1) << gradebook;
  fs::remove_all(root);
}

// Submissions of one module of the real course, each the reference's student files with code
// planted before `anchor` in `file` (and `prelude` before everything), graded in one batch through
// the sandbox into ROOT/results/NAME.json. Returns what `grade` said when it failed, "" otherwise.
std::string grade_planted(const fs::path& root, const std::string& module, const std::vector<std::string>& files,
                          const std::string& file, const std::string& anchor, const std::string& prelude,
                          const std::map<std::string, std::string>& planted, int jobs) {
  const fs::path course = KILN_HOME_DIR;
  const fs::path solution = course / "solutions" / module / "src";
  for (const auto& [name, code] : planted) {
    const fs::path dir = root / "submissions" / name / "src";
    fs::create_directories(dir);
    for (const std::string& f : files)
      if (f != file) fs::copy_file(solution / f, dir / f);
    std::string text = read_file(solution / file);
    const auto at = text.find(anchor);
    if (at == std::string::npos) return file + " no longer holds \"" + anchor + "\": update this test";
    text.insert(at, code);
    std::ofstream(dir / file) << prelude << text;
  }
  // Under bin/test, through its compiler cache (CCACHE_DIR set): grading modules 17 and 20 builds
  // their prerequisites' reference libraries in three trusted build folders of their own (the
  // reference, the timed submission, the timed reference), the same files with the same flags.
  // Those folders, under this repository's .grader/build/, keep the launcher once configured; the
  // sandboxed compiles of the submissions go without it (make_recipe).
  std::vector<std::pair<std::string, std::string>> env = {{"KILN_HOME", KILN_HOME_DIR}};
  if (std::getenv("CCACHE_DIR")) env.emplace_back("CMAKE_CXX_COMPILER_LAUNCHER", "ccache");
  const ProcessResult r = run_process(
      {.argv = {KILN_GRADER, "--root", course.string(), "grade", "--batch", (root / "submissions").string(), "--module",
                module.substr(0, 2), "--format", "json", "--out", (root / "results").string(), "-j", std::to_string(jobs)},
       .env = env,
       .output_cap = 1 << 20});
  return r.exit_code == 0 ? "" : r.out + r.err;
}

// One check's result in ROOT/results/NAME.json.
nlohmann::json check_result(const fs::path& root, const std::string& name, const std::string& id) {
  const auto result = nlohmann::json::parse(read_file(root / "results" / (name + ".json")));
  for (const auto& c : result["checks"])
    if (c["id"] == id) return c;
  return nlohmann::json();
}

// Submissions of the real course's module 17 that attack its speed-graded check: the reference
// solution with one change planted in tiled_matmul. Graded in one batch through the sandbox.
TEST(Hostile, SpeedCountsAllTheWorkAndOnlyRightResults) {
  const fs::path root = fs::temp_directory_path() / ("kiln-hostile-speed-" + std::to_string(getpid()));
  fs::remove_all(root);
  const std::string anchor = "  // One output tile C[i0:i_end, j0:j_end] at a time";
  const std::map<std::string, std::string> planted = {
      {"reference", ""},
      // The work goes to a process that this one never waits for, and that the kernel reaps on
      // its own (SIGCHLD ignored), and is slow on purpose: its CPU time must still count.
      {"hidden_worker", R"(  {
    int channel[2];
    ::signal(SIGCHLD, SIG_IGN);
    if (::pipe(channel) == 0) {
      if (::fork() == 0) {
        std::vector<float> out(static_cast<std::size_t>(n * m));
        for (int again = 0; again < 8; ++again)
          for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < m; ++j) {
              float sum = 0;
              for (std::int64_t p = 0; p < inner; ++p) sum += a_data[i * inner + p] * b_data[p * m + j];
              out[static_cast<std::size_t>(i * m + j)] = sum;
            }
        const char* bytes = reinterpret_cast<const char*>(out.data());
        for (std::size_t done = 0, total = out.size() * sizeof(float); done < total;) {
          const ssize_t w = ::write(channel[1], bytes + done, total - done);
          if (w <= 0) break;
          done += static_cast<std::size_t>(w);
        }
        ::_exit(0);
      }
      ::close(channel[1]);
      char* into = reinterpret_cast<char*>(c_data);
      for (std::size_t done = 0, total = static_cast<std::size_t>(n * m) * sizeof(float); done < total;) {
        const ssize_t r = ::read(channel[0], into + done, total - done);
        if (r <= 0) break;
        done += static_cast<std::size_t>(r);
      }
      ::close(channel[0]);
      return c;
    }
  }
)"},
      // Right whenever it is observed, and a fast wrong answer whenever it is timed.
      {"knows_when_timed", "  if (std::getenv(\"KILN_SPEED_CALLS\")) return c;\n"},
      // Writes a verdict of its own into every descriptor it may hold, the timed run's results
      // among them: it can spoil its own results, never pass for the verifier.
      {"forges_the_verdict", "  if (std::getenv(\"KILN_SPEED_CALLS\")) for (int fd = 1; fd < 20; ++fd) (void)!::write(fd, \"ok\\n\", 3);\n"},
      // Prints while it works, as a kernel being debugged does: standard output is not the results.
      {"prints_while_timed", "  if (std::getenv(\"KILN_SPEED_CALLS\")) std::printf(\"tiled_matmul of %ld rows\\n\", static_cast<long>(n));\n"},
      // Looks for the answer in its own process: works out two elements, then searches every
      // writable mapping (read through /proc/self/mem, which the sanitizers do not watch) for
      // them and copies what follows. Zeros when nothing is found. The observed program never
      // computes an expected value, so there is nothing to find.
      {"finds_the_answer_in_memory", R"(  {
    float c00 = 0, c01 = 0;
    for (std::int64_t p = 0; p < inner; ++p) {
      c00 += a_data[p] * b_data[p * m];
      if (m > 1) c01 += a_data[p] * b_data[p * m + 1];
    }
    const auto near = [](float x, float y) { return std::fabs(x - y) <= 1e-4f * (1 + std::fabs(y)); };
    const std::size_t want = static_cast<std::size_t>(n * m) * sizeof(float);
    const int mem = ::open("/proc/self/mem", O_RDONLY);
    std::FILE* maps = std::fopen("/proc/self/maps", "r");
    std::vector<float> region;
    char line[512];
    bool found = false;
    while (mem >= 0 && maps && !found && std::fgets(line, sizeof line, maps)) {
      unsigned long low = 0, high = 0;
      char perms[8] = {};
      if (std::sscanf(line, "%lx-%lx %7s", &low, &high, perms) != 3 || perms[0] != 'r' || perms[1] != 'w') continue;
      if (high - low > (256ul << 20) || high - low < want) continue;  // not the sanitizers' shadow
      region.resize((high - low) / sizeof(float));
      if (::pread(mem, region.data(), high - low, static_cast<off_t>(low)) != static_cast<ssize_t>(high - low)) continue;
      for (std::size_t at = 0; at + static_cast<std::size_t>(n * m) <= region.size() && !found; ++at) {
        if (!near(region[at], c00) || (m > 1 && !near(region[at + 1], c01))) continue;
        if (low + at * sizeof(float) == reinterpret_cast<unsigned long>(c_data)) continue;
        std::memcpy(c_data, &region[at], want);
        found = true;
      }
    }
    if (maps) std::fclose(maps);
    if (mem >= 0) ::close(mem);
    return c;
  }
)"},
      // Hands the product to module 01's matmul, which module.yaml forbids here.
      {"calls_plain_matmul", "  if (tile_size > 0) return kiln::matmul(a, b);\n"},
      // Hands the product to the test library's trusted one, declared by hand.
      {"calls_the_trusted_product", R"(  if (tile_size > 0) {
    const kiln::testing::TensorData r = kiln::testing::reference_matmul(a, b);
    return kiln::Tensor(r.shape, r.values);
  }
)"},
  };
  const std::string failed = grade_planted(root, "17_acceleration", {"acceleration.cpp", "gpu_kernels.cpp"},
                                           "acceleration.cpp", anchor,
                                           "#include <fcntl.h>\n#include <signal.h>\n#include <unistd.h>\n#include <cmath>\n#include <cstdio>\n"
                                           "#include <cstdlib>\n#include <cstring>\n"
                                           "#include \"kiln/tensor.h\"\n"
                                           "namespace kiln::testing {\nstruct TensorData {\n  Shape shape, strides;\n"
                                           "  std::int64_t offset = 0;\n  std::vector<float> values;\n};\n"
                                           "TensorData reference_matmul(const Tensor& a, const Tensor& b);\n}\n",
                                           planted, 1);
  ASSERT_EQ(failed, "");
  auto speed_check = [&](const std::string& name) { return check_result(root, name, "tiled_matmul_speed"); };
  // The reference against itself: near 1×, whatever else runs on the machine.
  const auto reference = speed_check("reference");
  EXPECT_EQ(reference["status"], "passed") << reference.dump(2);
  EXPECT_GE(reference["points"].get<int>(), 2) << reference.dump(2);
  // Eight plain products in a hidden process: far past 10 times the reference's time.
  const auto printing = speed_check("prints_while_timed");
  EXPECT_EQ(printing["status"], "passed") << printing.dump(2);
  EXPECT_GE(printing["points"].get<int>(), 2) << printing.dump(2);
  // Eight plain products in a hidden process: far past 10 times the reference's time. Counting a
  // process nobody waits for needs a CPU cgroup (root and a cgroup file system).
  const auto hidden = speed_check("hidden_worker");
  EXPECT_EQ(hidden["status"], "passed") << hidden.dump(2);
  if (CpuCgroup("kiln-hostile-probe-" + std::to_string(getpid())).available())
    EXPECT_EQ(hidden["points"], 0) << hidden.dump(2);
  // Calls it may not make: refused before any check runs, naming the call.
  for (const std::string name : {"calls_plain_matmul", "calls_the_trusted_product"}) {
    SCOPED_TRACE(name);
    const auto result = nlohmann::json::parse(read_file(root / "results" / (name + ".json")));
    EXPECT_EQ(result["score"], 0) << result.dump(2);
    const std::string called = name == "calls_plain_matmul" ? "kiln::matmul(" : "kiln::testing::reference_matmul(";
    EXPECT_NE(result["checks"][0]["summary"].get<std::string>().find("refused: your code calls " + called),
              std::string::npos) << result["checks"][0].dump(2);
  }
  // Nothing in its process holds the answer: tiled_matmul fails as the zeros it returns deserve.
  const auto finder = check_result(root, "finds_the_answer_in_memory", "tiled_matmul");
  EXPECT_EQ(finder["status"], "failed") << finder.dump(2);
  EXPECT_EQ(finder["points"], 0) << finder.dump(2);
  for (const std::string name : {"knows_when_timed", "forges_the_verdict"}) {
    SCOPED_TRACE(name);
    const auto c = speed_check(name);
    EXPECT_EQ(c["status"], "failed") << c.dump(2);
    EXPECT_EQ(c["points"], 0) << c.dump(2);
    EXPECT_NE(c["summary"].get<std::string>().find("in a timed run"), std::string::npos) << c.dump(2);
  }
  fs::remove_all(root);
}

// Submissions of the capstone (module 20) that try to pair one model's accuracy and size with
// another's speed: the figures of a grade must all belong to the file the checks read.
TEST(Hostile, CapstoneFiguresBelongToOneModel) {
  const fs::path root = fs::temp_directory_path() / ("kiln-hostile-capstone-" + std::to_string(getpid()));
  fs::remove_all(root);
  const std::string anchor = "  return bytes;";
  // Another file with the same logits (a relu first, which changes nothing on pixels in [0, 1]).
  const std::string other = R"(
    static const std::vector<std::uint8_t> other = [] {
      Model m = load_model(bytes);
      m.layers.insert(m.layers.begin(), Layer{});
      return save_model(m);
    }();
    return other;
  }
)";
  const std::map<std::string, std::string> planted = {
      {"reference", ""},
      // The other file in the grader's timed runs: right results, and still not the checked model.
      {"switches_model", "  if (const char* timed = std::getenv(\"KILN_SPEED_CALLS\"); timed && *timed) {" + other},
      // The other file for the first call (the model check, in a check run); for every later
      // call, the speed check's and the timed runs', the file itself.
      {"two_models", "  static int calls = 0;\n  if (calls++ == 0) {" + other},
  };
  const std::string failed = grade_planted(root, "20_capstone", {"capstone.cpp", "capstone_model.cpp"},
                                           "capstone_model.cpp", anchor, "#include <cstdlib>\n", planted, 2);
  ASSERT_EQ(failed, "");
  auto check = [&](const std::string& name, const std::string& id) { return check_result(root, name, id); };
  // The reference: its figures come from the judge's reading of its bytes.
  const auto model = check("reference", "model");
  EXPECT_EQ(model["status"], "passed") << model.dump(2);
  ASSERT_EQ(model["figures"].size(), 2u) << model.dump(2);
  EXPECT_EQ(model["figures"][0]["name"], "accuracy");
  EXPECT_GE(model["figures"][0]["value"].get<double>(), 85.0) << model.dump(2);
  EXPECT_EQ(model["figures"][1]["name"], "size");
  EXPECT_EQ(model["figures"][1]["value"].get<double>(), 102776.0) << model.dump(2);
  const auto speed = check("reference", "predict_speed");
  EXPECT_EQ(speed["status"], "passed") << speed.dump(2);
  EXPECT_GE(speed["points"].get<int>(), 4) << speed.dump(2);
  // Another model in the timed runs: no points for speed, and the report says why.
  const auto switched = check("switches_model", "predict_speed");
  EXPECT_EQ(switched["status"], "failed") << switched.dump(2);
  EXPECT_EQ(switched["points"], 0) << switched.dump(2);
  EXPECT_NE(switched["summary"].get<std::string>().find("differs from the one the checked calls used"), std::string::npos)
      << switched.dump(2);
  // One model shown to the model check and another to the speed check: no points for speed.
  const auto two = check("two_models", "predict_speed");
  EXPECT_EQ(two["status"], "failed") << two.dump(2);
  EXPECT_EQ(two["points"], 0) << two.dump(2);
  EXPECT_NE(two["summary"].get<std::string>().find("were given different contexts"), std::string::npos) << two.dump(2);
  fs::remove_all(root);
}

}  // namespace
}  // namespace kiln::grader
