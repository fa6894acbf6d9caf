// Headless Chromium, driven over the DevTools protocol on a pipe (--remote-debugging-pipe): no
// network port, no WebSocket, no npm. One browser, one page; what the page logs is collected.
#pragma once

#include <sys/types.h>

#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::site_test {

class Chromium {
 public:
  // Starts `binary` with a fresh profile. Throws std::runtime_error when it cannot.
  explicit Chromium(const std::string& binary, int width = 1280, int height = 900);
  // The browser to use: $KILN_CHROMIUM, else chromium on the PATH, looked up when asked (a build
  // configured before chromium was installed still finds it).
  static std::string find();
  ~Chromium();
  Chromium(const Chromium&) = delete;
  Chromium& operator=(const Chromium&) = delete;

  // Loads url, waits for its load event and a settled frame; returns what went wrong meanwhile:
  // console errors, uncaught exceptions, resources that failed to load.
  std::vector<std::string> open(const std::string& url, double timeout_s = 20);
  // Problems reported since the last open() or problems() call.
  std::vector<std::string> problems();
  // The value of a JavaScript expression (a promise is awaited); throws when it throws.
  nlohmann::json evaluate(const std::string& expression, double timeout_s = 20);
  // A PNG of the viewport.
  std::string screenshot_png();
  void resize(int width, int height, bool mobile = false);

  // A command to the page (or, with browser_level, to the browser); returns its result.
  nlohmann::json call(const std::string& method, const nlohmann::json& params = nlohmann::json::object(),
                      double timeout_s = 20, bool browser_level = false);

 private:
  nlohmann::json next_message(double timeout_s);
  void note(const nlohmann::json& event);

  pid_t pid_ = -1;
  int to_browser_ = -1, from_browser_ = -1;
  int next_id_ = 1;
  std::string buffer_, session_;
  std::filesystem::path profile_;
  std::deque<nlohmann::json> events_;
  std::vector<std::string> problems_;
};

std::string base64_decode(const std::string& text);

}  // namespace kiln::site_test
