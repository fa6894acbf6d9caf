// `grader site serve`: a small HTTP/1.0 server for previewing the site. One request per
// connection, GET and HEAD only, files under the site folder only; loopback unless told otherwise.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "kiln/grader/site.h"

namespace kiln::grader {

namespace {

const std::map<std::string, std::string>& content_types() {
  static const std::map<std::string, std::string> types{
      {".html", "text/html; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"}, {".json", "application/json"},
      {".svg", "image/svg+xml"}, {".png", "image/png"}, {".jpg", "image/jpeg"},
      {".ico", "image/x-icon"}, {".woff2", "font/woff2"}, {".woff", "font/woff"},
      {".ttf", "font/ttf"}, {".otf", "font/otf"}, {".txt", "text/plain; charset=utf-8"}};
  return types;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

void respond(int fd, int status, const std::string& reason, const std::string& type, const std::string& body,
             bool head) {
  send_all(fd, fmt::format("HTTP/1.0 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\n"
                           "Connection: close\r\n\r\n",
                           status, reason, type, body.size()));
  if (!head) send_all(fd, body);
}

// The request target as a path under the site, or nothing when it tries to leave it.
std::optional<std::string> decode_path(const std::string& target) {
  std::string path = target.substr(0, target.find_first_of("?#"));
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && std::isxdigit(static_cast<unsigned char>(path[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(path[i + 2]))) {
      out += static_cast<char>(std::stoi(path.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += path[i];
    }
  }
  if (out.empty() || out[0] != '/' || out.find('\0') != std::string::npos || out.find('\\') != std::string::npos)
    return std::nullopt;
  std::stringstream segments(out);
  for (std::string s; std::getline(segments, s, '/');)
    if (s == "..") return std::nullopt;
  return out;
}

void handle(int fd, const fs::path& root) {
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.find("\n\n") == std::string::npos &&
         request.size() < 16384) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    request.append(buffer, static_cast<std::size_t>(n));
  }
  std::istringstream line(request.substr(0, request.find('\n')));
  std::string method, target;
  line >> method >> target;
  const bool head = method == "HEAD";
  if (method != "GET" && !head) return respond(fd, 405, "Method Not Allowed", "text/plain", "GET or HEAD only\n", false);
  const auto path = decode_path(target);
  if (!path) return respond(fd, 400, "Bad Request", "text/plain", "bad path\n", head);
  fs::path file = root / fs::path(*path).relative_path();
  std::error_code ec;
  if (fs::is_directory(file, ec)) file /= "index.html";
  const fs::path real = fs::weakly_canonical(file, ec);
  const std::string real_text = real.string(), root_text = root.string();
  const bool inside = real_text == root_text || real_text.compare(0, root_text.size() + 1, root_text + "/") == 0;
  if (ec || !inside || !fs::is_regular_file(real, ec)) {
    std::string body = "<!doctype html><title>Not found</title><p>Not found: " + std::string(*path) +
                       "</p><p><a href=\"/\">The course site</a></p>";
    std::printf("  404 %s\n", path->c_str());
    return respond(fd, 404, "Not Found", "text/html; charset=utf-8", body, head);
  }
  std::ifstream in(real, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  const auto type = content_types().find(real.extension().string());
  respond(fd, 200, "OK", type == content_types().end() ? "application/octet-stream" : type->second, content.str(),
          head);
}

}  // namespace

void serve_site(const fs::path& dir, const std::string& address, int port, const std::function<void(int)>& on_ready) {
  const fs::path root = fs::canonical(dir);
  ::signal(SIGPIPE, SIG_IGN);
  const int server = ::socket(AF_INET, SOCK_STREAM, 0);
  if (server < 0) throw CourseError(fmt::format("cannot open a socket: {}", std::strerror(errno)));
  const int yes = 1;
  setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1)
    throw CourseError(fmt::format("'{}' is not an IPv4 address (try 127.0.0.1)", address));
  if (::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(server, 16) != 0) {
    const std::string why = std::strerror(errno);
    ::close(server);
    throw CourseError(fmt::format("cannot listen on {}:{}: {}. Choose another port with --port", address, port, why));
  }
  socklen_t len = sizeof addr;
  getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len);
  on_ready(ntohs(addr.sin_port));
  for (;;) {
    const int client = ::accept(server, nullptr, nullptr);
    if (client < 0) {
      if (errno == EINTR) continue;
      break;
    }
    handle(client, root);
    ::close(client);
    std::fflush(stdout);
  }
  ::close(server);
}

}  // namespace kiln::grader
