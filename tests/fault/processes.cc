#include "tests/fault/processes.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace rs::test {

Result<Child> spawnChild(const std::string& name, const std::vector<std::string>& argv,
                         const std::vector<std::string>& env, bool captureStdout,
                         const std::string& logPath) {
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> envStrings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& x : env) overridden |= x.compare(0, key.size() + 1, key + "=") == 0;
    if (!overridden) envStrings.push_back(entry);
  }
  envStrings.insert(envStrings.end(), env.begin(), env.end());
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : envStrings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int pipeFds[2] = {-1, -1};
  if (captureStdout && ::pipe2(pipeFds, O_CLOEXEC) != 0)
    return internalError("pipe: " + std::string(std::strerror(errno)));
  const int logFd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (logFd < 0) return internalError("cannot open " + logPath);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return internalError("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(captureStdout ? pipeFds[1] : logFd, STDOUT_FILENO);
    ::dup2(logFd, STDERR_FILENO);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(logFd);
  Child c;
  c.name = name;
  c.pid = pid;
  if (captureStdout) {
    ::close(pipeFds[1]);
    c.outFd = pipeFds[0];
    ::fcntl(c.outFd, F_SETFL, ::fcntl(c.outFd, F_GETFL) | O_NONBLOCK);
  }
  return c;
}

void pollChild(Child& c) {
  char buf[4096];
  while (c.outFd >= 0) {
    const ssize_t n = ::read(c.outFd, buf, sizeof buf);
    if (n > 0) {
      c.out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    ::close(c.outFd);  // EOF or an error: nothing more will come
    c.outFd = -1;
  }
  if (c.exited || c.pid <= 0) return;
  int status = 0;
  const pid_t r = ::waitpid(c.pid, &status, WNOHANG | WUNTRACED);
  if (r != c.pid) return;
  if (WIFSTOPPED(status)) {
    c.stopped = true;
  } else if (WIFEXITED(status) || WIFSIGNALED(status)) {
    c.exited = true;
    c.stopped = false;
    c.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    c.exitedAt = std::chrono::steady_clock::now();
    pollChild(c);  // the rest of its output
  }
}

std::string lineStartingWith(const Child& c, const std::string& prefix) {
  std::istringstream in(c.out);
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, prefix.size(), prefix) == 0) return line;
  return "";
}

int doneCount(const Child& c) {
  int n = 0;
  for (size_t p = 0; (p = c.out.find("\ndone ", p)) != std::string::npos; ++p) ++n;
  return n + (c.out.compare(0, 5, "done ") == 0 ? 1 : 0);
}

void continueChild(Child& c) {
  if (c.exited) return;
  c.stopped = false;
  ::kill(c.pid, SIGCONT);
}

void stopChild(Child& c) {
  if (!c.exited) ::kill(c.pid, SIGSTOP);
}

bool killChild(Child& c, std::chrono::milliseconds deadline) {
  if (c.exited) return true;
  ::kill(c.pid, SIGKILL);
  return waitFor([&] { return c.exited; }, deadline, [&] { pollChild(c); });
}

bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
             const std::function<void()>& poll) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    if (poll) poll();
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

Result<Reducer> startReducer(const std::string& bin, const std::string& dir, int index,
                             const std::vector<std::string>& flags, uint16_t dataPort) {
  Reducer r;
  const std::string portFile = dir + "/r" + std::to_string(index) + ".port";
  r.log = dir + "/reducer" + std::to_string(index) + (dataPort != 0 ? "-restarted" : "") + ".log";
  ::unlink(portFile.c_str());
  std::vector<std::string> argv = {bin, "--data-listen",
                                   "127.0.0.1:" + std::to_string(dataPort), "--grpc-listen",
                                   "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                   "--port-file", portFile, "--stats-interval", "0"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto child = spawnChild("reducer" + std::to_string(index), argv, {}, false, r.log);
  if (!child) return child.status();
  r.proc = std::move(*child);
  unsigned data = 0, grpc = 0, metrics = 0;
  const bool up = waitFor(
      [&] {
        std::ifstream f(portFile);
        return static_cast<bool>(f >> data >> grpc >> metrics) && metrics != 0;
      },
      std::chrono::seconds(30), [&] { pollChild(r.proc); });
  if (!up || r.proc.exited) {
    killChild(r.proc);
    return internalError("reducer " + std::to_string(index) + " did not start: " + tail(r.log));
  }
  r.dataPort = static_cast<uint16_t>(data);
  r.metricsPort = static_cast<uint16_t>(metrics);
  return r;
}

Result<Metrics> scrapeMetrics(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return internalError("socket");
  timeval tv{10, 0};  // a hang guard: a scrape answers in milliseconds
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request =
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[16384];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
        response.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (response.compare(0, 12, "HTTP/1.1 200") != 0 || body == std::string::npos)
    return unavailableError("no metrics from port " + std::to_string(port));
  Metrics m;
  std::istringstream in(response.substr(body + 4));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    m[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return m;
}

double metric(const Metrics& m, const std::string& series) {
  auto it = m.find(series);
  return it == m.end() ? 0 : it->second;
}

long openFds(pid_t pid) {
  DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  long n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

long statusKb(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.compare(0, field.size() + 1, field + ":") == 0)
      return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  return -1;
}

std::string tail(const std::string& path, size_t bytes) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

void failRun(const std::string& why) {
  std::printf("FAILED: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(1);
}

std::string makeRunDir(const std::string& prefix, uint64_t a, uint64_t b) {
  std::string dir = "/tmp/" + prefix + "-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) failRun("mkdtemp: " + std::string(std::strerror(errno)));
  const std::string secret = dir + "/secret";
  FILE* f = std::fopen(secret.c_str(), "w");
  if (f == nullptr) failRun("cannot write " + secret);
  std::fprintf(f, "%016llx%016llx\n", static_cast<unsigned long long>(a),
               static_cast<unsigned long long>(b));
  std::fclose(f);
  ::chmod(secret.c_str(), 0600);
  return dir;
}

DriverArgs parseDriverArgs(int argc, char** argv, const std::string& usage,
                           const std::vector<std::pair<std::string, std::string*>>& more) {
  DriverArgs args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--server") args.serverBin = argv[i + 1];
    else if (flag == "--worker") args.workerBin = argv[i + 1];
    for (const auto& [name, value] : more)
      if (flag == name) *value = argv[i + 1];
  }
  if (args.serverBin.empty() || args.workerBin.empty()) failRun("usage: " + usage);
  return args;
}

std::string reducerList(const std::vector<Reducer>& reducers) {
  std::string out;
  for (const auto& r : reducers)
    out += fmt::format("{}127.0.0.1:{}", out.empty() ? "" : ",", r.dataPort);
  return out;
}

Metrics scrapeOrFail(const std::vector<Reducer>& reducers, int i) {
  const Reducer& r = reducers[static_cast<size_t>(i)];
  auto m = scrapeMetrics(r.metricsPort);
  if (!m) failRun(fmt::format("reducer {}: {}\n{}", i, m.status().message(), tail(r.log)));
  return *m;
}

std::string randomGroupId(std::mt19937_64& rng) {
  const uint64_t high = rng();
  return fmt::format("{:016x}{:016x}", high, rng());
}

std::vector<std::string> workerEnv(const std::vector<Reducer>& reducers, const std::string& dir,
                                   int timeoutMs, const std::vector<std::string>& more) {
  std::vector<std::string> env = {"RS_REDUCERS=" + reducerList(reducers),
                                  "RS_SECRET_FILE=" + dir + "/secret",
                                  fmt::format("RS_TIMEOUT_MS={}", timeoutMs),
                                  "RS_CONNECT_TIMEOUT_MS=10000", "RS_CLIENT_IO_THREADS=1"};
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

std::vector<std::string> stopBeforeArgs(int collective) {
  if (collective < 0) return {};
  return {"--stop-before", std::to_string(collective)};
}

std::vector<Child> spawnWorkers(const std::string& bin, const std::string& dir,
                                const std::string& name, const std::string& group, int world,
                                const std::vector<std::string>& env,
                                const std::function<std::vector<std::string>(int rank)>& argsOf) {
  std::vector<Child> out;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> argv = {bin,           "--group", group, "--world",
                                     std::to_string(world), "--rank",  std::to_string(r)};
    const std::vector<std::string> args = argsOf(r);
    argv.insert(argv.end(), args.begin(), args.end());
    auto c = spawnChild(name + std::to_string(r), argv, env, true, dir + "/workers.log");
    if (!c) failRun(c.status().message());
    out.push_back(std::move(*c));
  }
  return out;
}

std::string describeRun(const std::vector<const std::vector<Child>*>& groups,
                        const std::vector<Reducer>& reducers, size_t outTail) {
  std::string s;
  for (const std::vector<Child>* group : groups)
    for (const Child& w : *group)
      s += fmt::format("--- {} (pid {}, exit {}){}:\n{}", w.name, w.pid, w.exitCode,
                       outTail != 0 ? ", last lines" : "",
                       outTail != 0 && w.out.size() > outTail ? w.out.substr(w.out.size() - outTail)
                                                              : w.out);
  for (const Reducer& r : reducers)
    s += fmt::format("--- {} log tail:\n{}\n", r.proc.name, tail(r.log));
  return s;
}

void pollRun(const std::vector<std::vector<Child>*>& groups, std::vector<Reducer>& reducers) {
  for (std::vector<Child>* group : groups)
    for (Child& w : *group) pollChild(w);
  for (Reducer& r : reducers) pollChild(r.proc);
}

void awaitOrFail(const std::string& what, const std::function<bool()>& condition,
                 std::chrono::milliseconds deadline, const std::function<void()>& poll,
                 const std::function<std::string()>& describe) {
  if (!waitFor(condition, deadline, poll))
    failRun(fmt::format("timed out waiting for {}\n{}", what, describe()));
}

}  // namespace rs::test
