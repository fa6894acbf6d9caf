// The hostile submissions in tests/hostile/, graded in one batch through the sandbox. Each plants
// one attack in add(); the other four functions are right, so every other check must still score.
// The grader must survive all of them, and nothing outside its scratch folder may change.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/build.h"
#include "kiln/grader/process.h"

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
  EXPECT_GE(cases, 29);
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
      EXPECT_FALSE(uid >= 61000 && uid < 61064) << "a process of the sandbox user " << uid << " is still alive";
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

}  // namespace
}  // namespace kiln::grader
