#include "chromium.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

namespace kiln::site_test {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Puts `fd` at `target` in the child, without close-on-exec.
void place(int fd, int target) {
  if (fd == target) {
    fcntl(fd, F_SETFD, 0);
  } else {
    dup2(fd, target);
  }
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string Chromium::find() {
  if (const char* chosen = std::getenv("KILN_CHROMIUM"); chosen && *chosen) return chosen;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    for (const char* name : {"chromium", "chromium-browser"}) {
      const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return "";
}

Chromium::Chromium(const std::string& binary, int width, int height) {
  if (binary.empty() || access(binary.c_str(), X_OK) != 0)
    throw std::runtime_error("chromium not found ('" + binary + "'): install Debian's chromium (bin/packages.txt lists it)");
  char dir[] = "/tmp/kiln-chromium-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("cannot make a profile folder");
  profile_ = dir;
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  // Keep the child's ends clear of 3 and 4 before placing them there.
  const int child_in = fcntl(to[0], F_DUPFD_CLOEXEC, 10), child_out = fcntl(from[1], F_DUPFD_CLOEXEC, 10);
  close(to[0]), close(from[1]);
  const std::vector<std::string> args{binary,
                                      "--headless",
                                      "--no-sandbox",
                                      "--disable-gpu",
                                      "--disable-quic",
                                      "--no-first-run",
                                      "--disable-background-networking",
                                      "--disable-component-update",
                                      "--disable-sync",
                                      "--disable-extensions",
                                      "--disable-dev-shm-usage",
                                      "--hide-scrollbars",
                                      "--mute-audio",
                                      "--remote-debugging-pipe",
                                      "--user-data-dir=" + profile_.string(),
                                      "--window-size=" + std::to_string(width) + "," + std::to_string(height),
                                      "about:blank"};
  const std::string log = (profile_ / "chromium.log").string();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    setpgid(0, 0);
    place(child_in, 3);
    place(child_out, 4);
    const int logfd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (logfd >= 0) dup2(logfd, 1), dup2(logfd, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(child_in), close(child_out);
  to_browser_ = to[1];
  from_browser_ = from[0];

  const json target = call("Target.createTarget", {{"url", "about:blank"}}, 30, true);
  const json attached =
      call("Target.attachToTarget", {{"targetId", target.at("targetId")}, {"flatten", true}}, 20, true);
  session_ = attached.at("sessionId").get<std::string>();
  call("Page.enable");
  call("Runtime.enable");
  call("Log.enable");
  resize(width, height);
}

Chromium::~Chromium() {
  if (pid_ > 0) {
    try {
      json close_command = {{"id", next_id_++}, {"method", "Browser.close"}};
      const std::string text = close_command.dump() + '\0';
      [[maybe_unused]] auto n = write(to_browser_, text.data(), text.size());
    } catch (...) {
    }
    int status = 0;
    const double deadline = now_s() + 5;
    while (waitpid(pid_, &status, WNOHANG) == 0 && now_s() < deadline) usleep(20000);
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  if (to_browser_ >= 0) close(to_browser_);
  if (from_browser_ >= 0) close(from_browser_);
  std::error_code ec;
  if (!profile_.empty()) fs::remove_all(profile_, ec);
}

json Chromium::next_message(double timeout_s) {
  const double deadline = now_s() + timeout_s;
  for (;;) {
    const std::size_t end = buffer_.find('\0');
    if (end != std::string::npos) {
      json message = json::parse(buffer_.substr(0, end));
      buffer_.erase(0, end + 1);
      return message;
    }
    const double left = deadline - now_s();
    if (left <= 0) throw std::runtime_error("chromium did not answer in time");
    pollfd p{from_browser_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(from_browser_, chunk, sizeof chunk);
    if (n <= 0) throw std::runtime_error("chromium closed its DevTools pipe (see its log in " + profile_.string() + ")");
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

void Chromium::note(const json& event) {
  if (event.value("sessionId", "") != session_) return;
  const std::string method = event.value("method", "");
  const json& p = event.contains("params") ? event["params"] : json::object();
  if (method == "Runtime.exceptionThrown") {
    const json& d = p["exceptionDetails"];
    std::string text = d.value("text", "exception");
    if (d.contains("exception") && d["exception"].contains("description"))
      text += ": " + d["exception"]["description"].get<std::string>();
    problems_.push_back("uncaught " + text);
  } else if (method == "Runtime.consoleAPICalled") {
    const std::string type = p.value("type", "");
    if (type != "error" && type != "assert") return;
    std::string text = "console." + type + ":";
    for (const auto& a : p["args"]) {
      if (a.contains("value")) text += " " + (a["value"].is_string() ? a["value"].get<std::string>() : a["value"].dump());
      else if (a.contains("description")) text += " " + a["description"].get<std::string>();
    }
    problems_.push_back(text);
  } else if (method == "Log.entryAdded") {
    const json& e = p["entry"];
    if (e.value("level", "") == "error")
      problems_.push_back("log: " + e.value("text", "") + (e.contains("url") ? " (" + e.value("url", "") + ")" : ""));
  } else {
    events_.push_back(event);
  }
}

json Chromium::call(const std::string& method, const json& params, double timeout_s, bool browser_level) {
  const int id = next_id_++;
  json message = {{"id", id}, {"method", method}, {"params", params}};
  if (!browser_level) message["sessionId"] = session_;
  const std::string text = message.dump() + '\0';
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = write(to_browser_, text.data() + done, text.size() - done);
    if (n <= 0) throw std::runtime_error("cannot write to chromium");
    done += static_cast<std::size_t>(n);
  }
  const double deadline = now_s() + timeout_s;
  for (;;) {
    json reply = next_message(std::max(0.01, deadline - now_s()));
    if (!reply.contains("id")) {
      note(reply);
      continue;
    }
    if (reply["id"] != id) continue;
    if (reply.contains("error")) throw std::runtime_error(method + ": " + reply["error"].dump());
    return reply.value("result", json::object());
  }
}

std::vector<std::string> Chromium::open(const std::string& url, double timeout_s) {
  problems_.clear();
  events_.clear();
  const json nav = call("Page.navigate", {{"url", url}}, timeout_s);
  if (nav.contains("errorText")) problems_.push_back("cannot load " + url + ": " + nav["errorText"].get<std::string>());
  const double deadline = now_s() + timeout_s;
  bool loaded = false;
  while (!loaded) {
    for (const auto& e : events_) loaded |= e.value("method", "") == "Page.loadEventFired";
    events_.clear();
    if (loaded) break;
    if (now_s() > deadline) {
      problems_.push_back("no load event for " + url);
      break;
    }
    note(next_message(std::max(0.01, deadline - now_s())));
  }
  // Let fonts and the frame after load settle, so that late errors are caught too.
  evaluate("document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 50))))");
  return problems();
}

std::vector<std::string> Chromium::problems() {
  std::vector<std::string> out;
  out.swap(problems_);
  return out;
}

json Chromium::evaluate(const std::string& expression, double timeout_s) {
  const json r = call("Runtime.evaluate",
                      {{"expression", expression}, {"awaitPromise", true}, {"returnByValue", true}}, timeout_s);
  if (r.contains("exceptionDetails")) throw std::runtime_error("script failed: " + r["exceptionDetails"].dump());
  return r["result"].value("value", json());
}

void Chromium::resize(int width, int height, bool mobile) {
  call("Emulation.setDeviceMetricsOverride",
       {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", mobile}});
}

std::string Chromium::screenshot_png() {
  const json r = call("Page.captureScreenshot", {{"format", "png"}}, 30);
  return base64_decode(r.at("data").get<std::string>());
}

std::string base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, buffer = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) continue;
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

}  // namespace kiln::site_test
