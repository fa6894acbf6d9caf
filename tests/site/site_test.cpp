// The course site: built from the real course and opened in headless Chromium (every page loads
// cleanly, no link is broken, all math is typeset, module 17 shows its failure catalogue); built
// from a fixture whose module.yaml is then changed (the page follows); served on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chromium.h"
#include "kiln/grader/course.h"
#include "kiln/grader/process.h"
#include "kiln/grader/site.h"

namespace kiln::grader {
namespace {

using nlohmann::json;
using site_test::Chromium;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string collapse(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string url_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

ProcessResult build_site(const fs::path& root, const fs::path& out) {
  return run_process({.argv = {KILN_GRADER, "--root", root.string(), "site", "build", "--out", out.string()},
                      .env = {{"KILN_HOME", KILN_HOME_DIR}, {"NO_COLOR", "1"}}});
}

// Everything a test wants to know about a loaded page, gathered in the page itself.
const char* kInspect = R"JS((() => {
  const out = {ids: [], headings: [], links: [], rawMath: [], equations: 0, unrendered: 0, mathErrors: 0, failures: {}};
  document.querySelectorAll('[id]').forEach(e => out.ids.push(e.id));
  document.querySelectorAll('h2').forEach(e => out.headings.push(e.textContent.trim()));
  document.querySelectorAll('a[href], link[href], script[src], img[src], source[src], iframe[src], use[href]').forEach(e => {
    const attr = e.getAttribute('href') ?? e.getAttribute('src');
    out.links.push({tag: e.tagName.toLowerCase(), url: new URL(attr, document.baseURI).href});
  });
  const equations = document.querySelectorAll('x-equation');
  out.equations = equations.length;
  equations.forEach(e => { if (!e.querySelector('.katex')) out.unrendered++; });
  out.mathErrors = document.querySelectorAll('.katex-error, .math-error').length;
  // The text a reader sees outside code and typeset math: no TeX may be left in it.
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll('pre, code, .katex, script, style, svg, #search-results').forEach(e => e.remove());
  const text = clone.textContent;
  const raw = [/\$\$/, /\$[^$\s][^$\n]{0,300}?[^$\s\\]\$/, /\\[a-zA-Z]{2,}/, /\\[(\[]/];
  for (const p of raw) { const m = text.match(p); if (m) out.rawMath.push(m[0]); }
  document.querySelectorAll('.failure[data-failure]').forEach(f => {
    out.failures[f.dataset.failure] = {message: f.querySelector('.message .text').innerText,
                                       hint: f.querySelector('.hint').innerText};
  });
  return out;
})())JS";

struct Visit {
  std::vector<std::string> problems;
  json info;
};

// ---------------------------------------------------------------------------------------------
// The real course, in a browser.

class SiteBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = temp_dir("kiln-site");
    const ProcessResult built = build_site(KILN_HOME_DIR, out_);
    build_output_ = built.out + built.err;
    if (!built.ok()) return;
    try {
      browser_ = std::make_unique<Chromium>(Chromium::find());
      for (const auto& entry : fs::directory_iterator(out_)) {
        if (entry.path().extension() != ".html") continue;
        Visit v;
        v.problems = browser_->open("file://" + entry.path().string());
        v.info = browser_->evaluate(kInspect);
        for (auto& p : browser_->problems()) v.problems.push_back(p);
        visits_[entry.path().filename().string()] = v;
      }
    } catch (const std::exception& e) {
      browser_error_ = e.what();
    }
  }
  static void TearDownTestSuite() {
    browser_.reset();
    fs::remove_all(out_);
  }
  void SetUp() override {
    ASSERT_TRUE(build_output_.find("Wrote") != std::string::npos) << "grader site build failed:\n" << build_output_;
    ASSERT_TRUE(browser_error_.empty()) << browser_error_;
    ASSERT_GE(visits_.size(), 4u) << "too few pages were visited";
  }

  static inline fs::path out_;
  static inline std::string build_output_, browser_error_;
  static inline std::unique_ptr<Chromium> browser_;
  static inline std::map<std::string, Visit> visits_;
};

TEST_F(SiteBrowser, EveryPageLoadsWithoutConsoleErrors) {
  for (const auto& [page, v] : visits_)
    for (const auto& p : v.problems) ADD_FAILURE() << page << ": " << p;
}

TEST_F(SiteBrowser, EveryModuleHasItsPage) {
  const Course course = load_course(KILN_HOME_DIR);
  for (const auto& m : course.modules) EXPECT_TRUE(visits_.count(m.name() + ".html")) << m.name();
  for (const char* page : {"index.html", "quickstart.html", "instructor.html"}) EXPECT_TRUE(visits_.count(page)) << page;
}

TEST_F(SiteBrowser, NoInternalLinkIsBrokenAndEveryAssetIsLocal) {
  const std::string root = fs::canonical(out_).string() + "/";
  int checked = 0;
  for (const auto& [page, v] : visits_) {
    for (const auto& link : v.info["links"]) {
      const std::string url = link["url"], tag = link["tag"];
      if (url.rfind("file://", 0) != 0) {
        // Only a reader's link may leave the site; what a page loads must be in it.
        EXPECT_EQ(tag, "a") << page << " loads " << url << " from outside the site";
        continue;
      }
      ++checked;
      std::string path = url.substr(7);
      std::string fragment;
      if (const auto hash = path.find('#'); hash != std::string::npos) fragment = url_decode(path.substr(hash + 1)), path.erase(hash);
      if (const auto q = path.find('?'); q != std::string::npos) path.erase(q);
      path = url_decode(path);
      if (path.rfind(root, 0) != 0) {
        ADD_FAILURE() << page << " links outside the site: " << url;
        continue;
      }
      if (!fs::is_regular_file(path)) {
        ADD_FAILURE() << page << " links to a missing file: " << url;
        continue;
      }
      if (fragment.empty()) continue;
      const std::string target = fs::path(path).filename().string();
      ASSERT_TRUE(visits_.count(target)) << target;
      const auto& ids = visits_.at(target).info["ids"];
      EXPECT_NE(std::find(ids.begin(), ids.end(), fragment), ids.end())
          << page << " links to #" << fragment << ", which " << target << " does not have";
    }
  }
  EXPECT_GT(checked, 100) << "suspiciously few links";
  std::printf("checked %d internal links on %zu pages\n", checked, visits_.size());
}

TEST_F(SiteBrowser, AllMathIsTypesetAndNoTexIsLeftInTheText) {
  int equations = 0;
  for (const auto& [page, v] : visits_) {
    equations += v.info["equations"].get<int>();
    EXPECT_EQ(v.info["unrendered"], 0) << page << " has math KaTeX did not render";
    EXPECT_EQ(v.info["mathErrors"], 0) << page << " has math KaTeX could not parse";
    for (const auto& raw : v.info["rawMath"]) ADD_FAILURE() << page << " shows raw TeX: " << raw;
  }
  EXPECT_GT(equations, 50) << "the chapters' math did not become equations";
  std::printf("%d equations typeset\n", equations);
}

TEST_F(SiteBrowser, NoPageHasTwoSectionsOfTheSameName) {
  for (const auto& [page, v] : visits_) {
    std::set<std::string> seen;
    for (const auto& heading : v.info["headings"])
      EXPECT_TRUE(seen.insert(heading.get<std::string>()).second) << page << " has two sections called " << heading;
  }
}

TEST_F(SiteBrowser, Module17ShowsEveryCataloguedFailureWithItsHint) {
  const Course course = load_course(KILN_HOME_DIR);
  const Module& m = course.find("17");
  const Visit& v = visits_.at(m.name() + ".html");
  const json& shown = v.info["failures"];
  int catalogued = 0;
  for (const auto& c : m.checks) {
    for (const auto& f : c.failures) {
      const std::string key = c.id + "/" + f.id;
      if (c.visibility == Visibility::hidden) {
        EXPECT_FALSE(shown.contains(key)) << "a hidden check's failure is shown: " << key;
        continue;
      }
      ++catalogued;
      ASSERT_TRUE(shown.contains(key)) << "not on the page: " << key;
      EXPECT_EQ(collapse(shown[key]["message"]), collapse(f.message)) << key;
      const std::string hint = collapse(shown[key]["hint"]);
      EXPECT_NE(hint.find(collapse(f.hint)), std::string::npos) << key << "\npage: " << hint << "\nyaml: " << f.hint;
    }
  }
  EXPECT_GE(catalogued, 5);
  EXPECT_EQ(shown.size(), static_cast<std::size_t>(catalogued)) << "the page shows failures module.yaml does not have";
  std::printf("module 17: %d catalogued failures shown with their hints\n", catalogued);
}

TEST_F(SiteBrowser, SearchFindsSectionsOfTheRightPage) {
  browser_->open("file://" + (out_ / "index.html").string());
  const json urls = browser_->evaluate("KilnSearch.query('im2col col2im').then(r => r.map(e => e.u))");
  ASSERT_FALSE(urls.empty());
  EXPECT_EQ(urls[0].get<std::string>().rfind("17_acceleration.html", 0), 0u) << urls.dump();
  // Typing into the box shows results that link into the site.
  const json shown = browser_->evaluate(R"JS((async () => {
    const input = document.getElementById('search');
    input.value = 'broadcasting';
    input.dispatchEvent(new Event('input'));
    await new Promise(r => setTimeout(r, 200));
    return [...document.querySelectorAll('#search-results a')].map(a => a.href);
  })())JS");
  ASSERT_FALSE(shown.empty());
  for (const auto& url : shown) {
    std::string path = url.get<std::string>().substr(7);
    EXPECT_TRUE(fs::is_regular_file(url_decode(path.substr(0, path.find('#'))))) << url;
  }
  EXPECT_TRUE(browser_->problems().empty());
}

// ---------------------------------------------------------------------------------------------
// Generation: the pages follow module.yaml.

TEST(SiteGeneration, AChangedFailureMessageAppearsOnThePageAfterARebuild) {
  const fs::path root = temp_dir("kiln-site-fixture");
  fs::copy(fs::path(KILN_FIXTURES) / "probe", root, fs::copy_options::recursive);
  const fs::path out = root / "_site";
  const std::string old_message = "add(2, 3) should be 5, got {got}";
  const std::string new_message = "add(2, 3) must give 5: it gave {got}";

  auto shown = [&](Chromium& browser) {
    browser.open("file://" + (out / "01_probe.html").string());
    return browser.evaluate(kInspect)["failures"];
  };
  ProcessResult r = build_site(root, out);
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  Chromium browser(Chromium::find());
  json before = shown(browser);
  ASSERT_TRUE(before.contains("adds/wrong_sum")) << before.dump();
  EXPECT_EQ(collapse(before["adds/wrong_sum"]["message"]), old_message);
  EXPECT_FALSE(before.contains("multiplies/wrong_product")) << "the hidden check's failure is shown";

  const fs::path yaml = root / "modules" / "01_probe" / "module.yaml";
  std::string text = read_file(yaml);
  const auto at = text.find(old_message);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, old_message.size(), new_message);
  std::ofstream(yaml) << text;

  r = build_site(root, out);
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  json after = shown(browser);
  EXPECT_EQ(collapse(after["adds/wrong_sum"]["message"]), new_message);
  const std::string html = read_file(out / "01_probe.html");
  EXPECT_EQ(html.find("should be 5, got"), std::string::npos) << "the old message is still on the page";
  EXPECT_TRUE(browser.problems().empty());
  fs::remove_all(root);
}

TEST(SiteGeneration, WhatYouWriteListsEveryStubWithItsDeclaration) {
  const fs::path root = temp_dir("kiln-site-stubs");
  fs::copy(fs::path(KILN_FIXTURES) / "probe", root, fs::copy_options::recursive);
  ASSERT_TRUE(build_site(root, root / "_site").ok());
  const std::string html = read_file(root / "_site" / "01_probe.html");
  for (const char* signature : {"int add(int a, int b)", "int crash()", "int spin()", "int quit()", "int mul(int a, int b)"})
    EXPECT_NE(html.find(signature), std::string::npos) << signature;
  EXPECT_NE(html.find("5 functions in"), std::string::npos);
  // Each function's promises from module.yaml, with the checks that hold it; a hidden one unnamed.
  EXPECT_NE(html.find("What the checks hold it to (1)"), std::string::npos);
  EXPECT_NE(html.find("returns the sum of its two arguments <span class=\"muted\">· <a href=\"#fail-adds\">"),
            std::string::npos);
  EXPECT_NE(html.find("returns the product of its two arguments <span class=\"muted\">· a hidden check"),
            std::string::npos);
  EXPECT_EQ(html.find("#fail-multiplies"), std::string::npos) << "the hidden check is named";
  fs::remove_all(root);
}

TEST(SiteGeneration, EveryStubOfTheCourseIsListedWithItsDeclarationAndADescription) {
  const Course course = load_course(KILN_HOME_DIR);
  for (const auto& m : course.modules) {
    std::size_t stubs = 0;
    for (const auto& file : m.student_files) {
      const std::string text = read_file(m.dir / file);
      for (std::size_t p = text.find("NotImplemented()"); p != std::string::npos; p = text.find("NotImplemented()", p + 1))
        stubs += text.compare(p >= 6 ? p - 6 : 0, 6, "throw ") == 0 || text.compare(p >= 12 ? p - 12 : 0, 12, "throw kiln::") == 0;
      // A kernel's stub cannot throw on a device: it is a statement of its own, KILN_NOT_IMPLEMENTED();.
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);)
        stubs += line.find_first_not_of(' ') != std::string::npos &&
                 line.substr(line.find_first_not_of(' ')) == "KILN_NOT_IMPLEMENTED();";
    }
    const auto functions = student_functions(course, m);
    EXPECT_EQ(functions.size(), stubs) << m.name() << ": the site lists another number of functions than the stubs";
    for (const auto& f : functions) {
      EXPECT_FALSE(f.header.empty()) << m.name() << ": " << f.name << " has no declaration in the headers";
      EXPECT_FALSE(f.description.empty()) << m.name() << ": " << f.name << " has no comment to describe it";
      EXPECT_NE(f.signature.find(f.name.substr(f.name.rfind("::") == std::string::npos ? 0 : f.name.rfind("::") + 2)),
                std::string::npos) << f.signature;
    }
  }
}

TEST(SiteGeneration, APipeEscapedInATableIsAPipeInCodeAndMath) {
  // As on GitHub: in a table, \| is a pipe that does not end the cell, in code spans and math too.
  const std::string html = markdown_to_html("| a | b |\n|---|---|\n| `x \\| y` | for $\\|x\\|$ up to 1000 |\n\n"
                                            "Outside a table, $\\|x\\|$ is a norm.\n");
  EXPECT_NE(html.find("<code>x | y</code>"), std::string::npos) << html;
  EXPECT_NE(html.find("<x-equation>|x|</x-equation> up to 1000"), std::string::npos) << html;
  EXPECT_NE(html.find("Outside a table, <x-equation>\\|x\\|</x-equation>"), std::string::npos) << html;
}

// A student's release: after the student wrote the module (committed or not), its page still lists
// every function the release's stubs asked for.
TEST(SiteGeneration, AReleaseListsTheStubsAfterTheStudentWroteThem) {
  const fs::path root = temp_dir("kiln-site-release");
  const fs::path course = root / "course", release = root / "release";
  fs::create_directories(root);
  fs::copy(fs::path(KILN_FIXTURES) / "probe", course, fs::copy_options::recursive);
  const ProcessResult released =
      run_process({.argv = {KILN_GRADER, "--root", course.string(), "release", release.string()},
                   .env = {{"KILN_HOME", KILN_HOME_DIR}, {"NO_COLOR", "1"}}});
  ASSERT_TRUE(released.ok()) << released.out << released.err;
  ASSERT_TRUE(fs::exists(release / ".git")) << "the release is not a git repository";
  const fs::path student_file = release / "modules" / "01_probe" / "src" / "probe.cpp";
  fs::copy_file(course / "solutions" / "01_probe" / "src" / "probe.cpp", student_file,
                fs::copy_options::overwrite_existing);
  ASSERT_EQ(read_file(student_file).find("NotImplemented"), std::string::npos) << "the module is not written";

  auto expect_every_stub = [&](const std::string& when) {
    const fs::path out = root / ("site-" + when);
    const ProcessResult r = build_site(release, out);
    ASSERT_TRUE(r.ok()) << when << ": " << r.out << r.err;
    const std::string html = read_file(out / "01_probe.html");
    EXPECT_EQ(html.find("Nothing is left unwritten"), std::string::npos) << when;
    EXPECT_NE(html.find("5 functions in"), std::string::npos) << when;
    for (const char* signature : {"int add(int a, int b)", "int crash()", "int spin()", "int quit()", "int mul(int a, int b)"})
      EXPECT_NE(html.find(signature), std::string::npos) << when << ": " << signature;
  };
  expect_every_stub("written");
  const std::string git = "git -C " + release.string();
  ASSERT_EQ(std::system((git + " -c user.name=s -c user.email=s@s commit -qam mine").c_str()), 0);
  expect_every_stub("committed");
  fs::remove_all(root);
}

TEST(SiteGeneration, RefusesToOverwriteAFolderThatIsNotASite) {
  const fs::path root = temp_dir("kiln-site-refuse");
  fs::create_directories(root / "precious");
  std::ofstream(root / "precious" / "notes.txt") << "keep me";
  const ProcessResult r = build_site(KILN_HOME_DIR, root / "precious");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no .kiln-site"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(root / "precious" / "notes.txt"), "keep me");
  fs::remove_all(root);
}

// ---------------------------------------------------------------------------------------------
// grader site serve: a loopback preview that serves the site and nothing else.

std::string http_get(int port, const std::string& request_line) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = request_line + "\r\nHost: localhost\r\n\r\n";
  (void)::send(fd, request.data(), request.size(), 0);
  std::string response;
  char buffer[8192];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return response;
}

TEST(SiteServe, ServesTheSiteOnLoopbackAndNothingOutsideIt) {
  const fs::path out = temp_dir("kiln-site-serve");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    close(pipe_fds[0]);
    setenv("KILN_HOME", KILN_HOME_DIR, 1);
    execl(KILN_GRADER, KILN_GRADER, "--root", KILN_HOME_DIR, "site", "serve", "--port", "0", "--out", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  // Stops the server however the test ends.
  struct Stop {
    pid_t pid;
    int fd;
    ~Stop() {
      kill(pid, SIGTERM);
      int status = 0;
      waitpid(pid, &status, 0);
      close(fd);
    }
  } stop{pid, pipe_fds[0]};
  // Read until the "Serving ... on http://127.0.0.1:PORT/" line, for at most 20 s.
  std::string said;
  int port = 0;
  for (int waited_ms = 0; port == 0 && waited_ms < 20000;) {
    pollfd p{pipe_fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) {
      waited_ms += 100;
      continue;
    }
    char c;
    if (read(pipe_fds[0], &c, 1) != 1) break;
    said += c;
    const auto at = said.find("http://127.0.0.1:");
    if (c == '\n' && at != std::string::npos) port = std::stoi(said.substr(at + 17));
  }
  ASSERT_GT(port, 0) << said;

  const std::string index = http_get(port, "GET / HTTP/1.0");
  EXPECT_EQ(index.rfind("HTTP/1.0 200", 0), 0u) << index.substr(0, 200);
  EXPECT_NE(index.find("text/html"), std::string::npos);
  EXPECT_NE(index.find("<!doctype html>"), std::string::npos);
  EXPECT_EQ(http_get(port, "GET /assets/site.css HTTP/1.0").rfind("HTTP/1.0 200", 0), 0u);
  EXPECT_EQ(http_get(port, "GET /17_acceleration.html?x=1 HTTP/1.0").rfind("HTTP/1.0 200", 0), 0u);
  EXPECT_EQ(http_get(port, "GET /../../../etc/passwd HTTP/1.0").rfind("HTTP/1.0 400", 0), 0u);
  EXPECT_EQ(http_get(port, "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.0").rfind("HTTP/1.0 400", 0), 0u);
  EXPECT_EQ(http_get(port, "GET /no-such-page.html HTTP/1.0").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(http_get(port, "POST / HTTP/1.0").rfind("HTTP/1.0 405", 0), 0u);
  const std::string head = http_get(port, "HEAD / HTTP/1.0");
  EXPECT_EQ(head.find("<!doctype"), std::string::npos) << "HEAD sent a body";

  fs::remove_all(out);
}

}  // namespace
}  // namespace kiln::grader
