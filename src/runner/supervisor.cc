// The supervisor: nonce, fork of the worker, the relay loop, runner.json; see supervisor.h.
#include "runner/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runner/report.h"
#include "runner/runner_report.h"
#include "runner/sandbox.h"
#include "util/pid_namespace.h"

namespace stitch::runner {
namespace {

using nlohmann::json;

constexpr size_t kNonceMaxBytes = 256;

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string signal_text(int signal_number) {
  const char* name = sigabbrev_np(signal_number);
  return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal_number);
}

void use_dev_null_as(int fd) {
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return;
  if (null_fd != fd) {
    dup2(null_fd, fd);
    ::close(null_fd);
  }
}

struct WorkerProcess {
  pid_t pid = -1;
  int fd = -1;                    // the supervisor's end of the channel
  bool own_namespace = false;     // the worker is PID 1 of a namespace of its own
  std::string namespace_problem;  // why it is not, when it was asked to be
  std::string namespace_id;       // the worker's PID namespace
};

// The forked child: nothing of the supervisor's but the channel (fd 3) and the standard streams.
[[noreturn]] void run_worker(int channel_fd, pid_t supervisor, bool own_namespace,
                             SecretNonce& nonce, const WorkerEntry& entry) {
  nonce.wipe();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Outside its own namespace the worker sees its parent; as PID 1 it sees 0 either way.
  if (!own_namespace && getppid() != supervisor) _exit(kExitSetupFailed);
  if (channel_fd != 3) {
    dup2(channel_fd, 3);
    ::close(channel_fd);
  }
  close_range(4, ~0u, 0);
  use_dev_null_as(0);
  WorkerChannel channel(3);
  int code = entry(channel);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

Result<WorkerProcess> fork_worker(const SupervisorOptions& options, SecretNonce& nonce,
                                  const WorkerEntry& entry) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    return make_error("supervisor: socketpair: {}", std::strerror(errno));
  WorkerProcess worker;
  if (options.worker_pid_namespace == WorkerPidNamespace::own) {
    // Only the next child enters it (and becomes its PID 1): the supervisor forks once.
    if (unshare(CLONE_NEWPID) == 0) {
      worker.own_namespace = true;
      // Not /proc/<worker>: /proc may number processes otherwise than fork() returns them.
      char target[64];
      ssize_t length = readlink("/proc/self/ns/pid_for_children", target, sizeof target - 1);
      if (length > 0) worker.namespace_id.assign(target, static_cast<size_t>(length));
    } else
      worker.namespace_problem = fmt::format("unshare(CLONE_NEWPID): {}", std::strerror(errno));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t supervisor = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    ::close(ends[0]);
    run_worker(ends[1], supervisor, worker.own_namespace, nonce, entry);
  }
  int fork_errno = errno;
  ::close(ends[1]);
  if (pid < 0) {
    ::close(ends[0]);
    return make_error("supervisor: fork: {}", std::strerror(fork_errno));
  }
  worker.pid = pid;
  worker.fd = ends[0];
  return worker;
}

// What the relay saw of the worker.
struct Relay {
  std::optional<std::string> report;  // the last report frame
  std::vector<TimedMark> marks;
  std::string protocol_error;
  bool candidate_loaded = false;
  bool timed_out = false;
  int wait_status = 0;
  double wall_ms = 0;
};

// Feeds `bytes` received at `at_ms` through the decoder; false on a protocol violation.
bool take_bytes(FrameDecoder& decoder, std::string_view bytes, double at_ms, int fd, Relay& relay) {
  decoder.append(bytes);
  while (true) {
    auto frame = decoder.next();
    if (!frame) {
      relay.protocol_error = frame.error().message;
      return false;
    }
    if (!*frame) return true;
    if ((*frame)->type == FrameType::report) {
      relay.report = std::move((*frame)->payload);
      continue;
    }
    if ((*frame)->type != FrameType::mark) {
      relay.protocol_error = "channel: the worker sent an ack";
      return false;
    }
    auto mark = decode_mark((*frame)->payload);
    if (!mark) {
      relay.protocol_error = mark.error().message;
      return false;
    }
    if (mark->kind == MarkKind::candidate_loading) relay.candidate_loaded = true;
    relay.marks.push_back({*mark, at_ms});
    if (mark->kind == MarkKind::call_begin || mark->kind == MarkKind::probe_begin)
      (void)send_all(fd, encode_frame(FrameType::ack, ""));
  }
}

// Reads what is ready on the channel; false when it is closed or broken.
bool read_ready(FrameDecoder& decoder, int fd, Relay& relay, int flags) {
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, flags);
    double at = now_ms();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
    if (!take_bytes(decoder, std::string_view(buffer, static_cast<size_t>(n)), at, fd, relay))
      return false;
    if (!(flags & MSG_DONTWAIT)) return true;
  }
}

void kill_and_reap(pid_t pid, int& status) {
  kill(pid, SIGKILL);  // as PID 1 of its namespace: everything in it dies too
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// Relays until the worker has ended (or is killed: deadline, protocol violation).
Relay relay_worker(const WorkerProcess& worker, double deadline_s) {
  Relay relay;
  FrameDecoder decoder;
  double start = now_ms();
  bool open = true;
  while (true) {
    if (waitpid(worker.pid, &relay.wait_status, WNOHANG) == worker.pid) {
      if (open) read_ready(decoder, worker.fd, relay, MSG_DONTWAIT);  // what it sent last
      if (!relay.protocol_error.empty()) relay.report.reset();
      break;
    }
    double left = deadline_s > 0 ? start + deadline_s * 1e3 - now_ms() : 1e9;
    if (left <= 0) {
      relay.timed_out = true;
      kill_and_reap(worker.pid, relay.wait_status);
      break;
    }
    int wait = static_cast<int>(std::clamp(left, 1.0, 50.0));
    pollfd entry{open ? worker.fd : -1, POLLIN, 0};
    if (poll(&entry, 1, wait) > 0 && open) {
      open = read_ready(decoder, worker.fd, relay, 0);
      if (!relay.protocol_error.empty()) {
        relay.report.reset();
        kill_and_reap(worker.pid, relay.wait_status);
        break;
      }
    }
  }
  relay.wall_ms = now_ms() - start;
  return relay;
}

}  // namespace

SecretNonce::SecretNonce() {
  size_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* page = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    size_ = 0;
    return;
  }
  page_ = static_cast<char*>(page);
  wipe_on_fork_ = madvise(page_, size_, MADV_WIPEONFORK) == 0;
}

SecretNonce::~SecretNonce() {
  if (!page_) return;
  wipe();
  munmap(page_, size_);
}

Status SecretNonce::read_line(int fd) {
  if (!page_) return make_error("supervisor: no page for the nonce");
  size_t length = 0;
  while (true) {
    char byte = 0;
    ssize_t n = ::read(fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == '\n') break;
    if (length < kNonceMaxBytes) page_[length++] = byte;
  }
  page_[length] = '\0';
  use_dev_null_as(fd);
  return {};
}

std::string_view SecretNonce::view() const {
  return page_ ? std::string_view(page_) : "";
}

void SecretNonce::wipe() {
  if (page_) explicit_bzero(page_, size_);
}

namespace {

struct Ending {
  std::optional<RunStatus> status;  // nullopt: the worker's own
  std::string message;
  bool keep_report = true;  // the worker's document is the base of runner.json
};

std::string describe_exit(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "died of " + signal_text(WTERMSIG(wait_status));
  return fmt::format("exited with code {}", WEXITSTATUS(wait_status));
}

// How the run ends, from what the relay saw and the worker's (validated) report.
Ending decide_ending(const SupervisorOptions& options, const Relay& relay,
                     const std::optional<RunnerReport>& report) {
  if (relay.timed_out)
    return {RunStatus::timeout,
            fmt::format("the worker did not finish within {} s (the supervisor's deadline)",
                        options.deadline_s)};
  if (!relay.protocol_error.empty())
    return {RunStatus::crashed, "the worker broke the channel protocol: " + relay.protocol_error,
            false};
  if (!report)
    return {RunStatus::crashed,
            fmt::format("the worker {} without a report (the candidate ended it)",
                        describe_exit(relay.wait_status)),
            false};
  if (WIFSIGNALED(relay.wait_status))
    return {RunStatus::crashed,
            fmt::format("the worker {} after its report ({}: {})", describe_exit(relay.wait_status),
                        enum_name(report->status), report->message)};
  bool blames_machine =
      report->status == RunStatus::setup_failed || report->status == RunStatus::no_device;
  if (options.verification && relay.candidate_loaded && blames_machine)
    return {RunStatus::crashed,
            fmt::format("the worker reported {} after the candidate was loaded, which the "
                        "supervisor does not trust: {}",
                        enum_name(report->status), report->message)};
  return {};
}

// The worker's report, when it is a valid runner.json; otherwise the reason in `protocol_error`.
std::optional<json> validated_report(Relay& relay, std::optional<RunnerReport>& parsed) {
  if (!relay.report) return std::nullopt;
  auto report = parse_runner_report(*relay.report);
  json doc = json::parse(*relay.report, nullptr, /*allow_exceptions=*/false);
  if (!report || !doc.is_object()) {
    relay.protocol_error = "the worker's report is not a valid runner.json: " +
                           (report ? std::string("not an object") : report.error().message);
    return std::nullopt;
  }
  parsed = std::move(*report);
  return doc;
}

json timing_check_json(const SupervisorOptions& options, const Relay& relay,
                       const RunnerReport* report, std::vector<std::string>& violations) {
  CallIntervals seen = call_intervals(relay.marks);
  CallIntervals probes = call_intervals(relay.marks, MarkKind::probe_begin, MarkKind::probe_end);
  double loop_begin = -1, loop_end = -1;
  for (const TimedMark& entry : relay.marks) {
    if (entry.mark.kind == MarkKind::timed_loop_begin) loop_begin = entry.at_ms;
    if (entry.mark.kind == MarkKind::timed_loop_end) loop_end = entry.at_ms;
  }
  bool checked = report && options.verification && report->status == RunStatus::ok;
  if (checked)
    violations = cross_check_timing(seen, {report->gpu_ms, report->synced_ms, report->wall_ms},
                                    options.timing, probes);
  return {{"checked", checked},
          {"calls", seen.ms.size()},
          {"call_ms", seen.ms},
          {"probe_ms", probes.ms},
          {"underreport_slack_ms", underreport_slack_ms(options.timing, probes)},
          {"loop_ms", loop_begin >= 0 && loop_end >= loop_begin ? loop_end - loop_begin : 0.0},
          {"passed", violations.empty()},
          {"violations", violations}};
}

json pid_namespace_layer(const SupervisorOptions& options, const WorkerProcess& worker) {
  std::string ours = pid_namespace_id();
  bool joined = !options.orchestrator_pid_namespace.empty() && !ours.empty() &&
                ours != options.orchestrator_pid_namespace;
  std::string detail =
      joined ? fmt::format(
                   "runner in PID namespace {} (the verification's, shared with the "
                   "judge); the orchestrator's is {}",
                   ours, options.orchestrator_pid_namespace)
      : options.orchestrator_pid_namespace.empty()
          ? fmt::format("runner in PID namespace {}; the orchestrator did not say its own", ours)
          : fmt::format(
                "runner shares the orchestrator's PID namespace {} (verification "
                "namespace off or not permitted)",
                ours);
  if (worker.own_namespace)
    detail += fmt::format("; the worker is PID 1 of its own namespace {}", worker.namespace_id);
  else if (!worker.namespace_problem.empty())
    detail += "; no namespace of the worker's own: " + worker.namespace_problem;
  return {
      {"name", "pid_namespace"}, {"set_up", joined || worker.own_namespace}, {"detail", detail}};
}

// The supervisor's entries in sandbox.layers, replacing any the worker claimed under its names.
void add_layers(json& doc, const SupervisorOptions& options, const WorkerProcess& worker,
                const SecretNonce& nonce) {
  if (!doc["sandbox"].is_object()) doc["sandbox"] = json::object();
  json& layers = doc["sandbox"]["layers"];
  json kept = json::array();
  if (layers.is_array())
    for (const json& layer : layers)
      if (!layer.is_object() ||
          (layer.value("name", "") != "pid_namespace" && layer.value("name", "") != "supervisor"))
        kept.push_back(layer);
  kept.push_back(pid_namespace_layer(options, worker));
  kept.push_back(
      {{"name", "supervisor"},
       {"set_up", true},
       {"detail", fmt::format("worker pid {} reported over a socketpair; the nonce stayed with "
                              "the supervisor (wipe-on-fork {}); runner.json written by the "
                              "supervisor after the worker ended",
                              worker.pid, nonce.wipe_on_fork() ? "on" : "unavailable")}});
  layers = std::move(kept);
}

}  // namespace

int supervise(const SupervisorOptions& options, SecretNonce& nonce, const WorkerEntry& entry) {
  // Orphans of the worker come to us, so none outlives the run (list_child_processes below).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  ReportBuilder out(options.result);
  auto worker = fork_worker(options, nonce, entry);
  if (!worker) {
    out.update([&](json& doc) { doc["nonce"] = std::string(nonce.view()); });
    out.set_status(RunStatus::setup_failed, worker.error().message);
    (void)out.write();
    std::fprintf(stderr, "stitch-runner: setup failed: %s\n", worker.error().message.c_str());
    return kExitSetupFailed;
  }
  // The worker (same uid, for now) may not read our memory through /proc or ptrace.
  prctl(PR_SET_DUMPABLE, 0);
  Relay relay = relay_worker(*worker, options.deadline_s);
  ::close(worker->fd);
  kill_processes(list_child_processes());  // runner.json is written once nothing of it is left

  std::optional<RunnerReport> parsed;
  std::optional<json> report = validated_report(relay, parsed);
  Ending ending = decide_ending(options, relay, parsed);
  std::vector<std::string> violations;
  json timing_check =
      timing_check_json(options, relay, ending.status ? nullptr : &*parsed, violations);
  out.update([&](json& doc) {
    if (report && ending.keep_report) doc = std::move(*report);
    doc["nonce"] = std::string(nonce.view());
    doc["supervisor"] = {
        {"worker",
         {{"pid", worker->pid},
          {"exit_code", WIFEXITED(relay.wait_status) ? WEXITSTATUS(relay.wait_status) : -1},
          {"signal", WIFSIGNALED(relay.wait_status) ? WTERMSIG(relay.wait_status) : 0},
          {"report_received", relay.report.has_value()},
          {"protocol_error", relay.protocol_error}}},
        {"deadline_s", options.deadline_s},
        {"timed_out", relay.timed_out},
        {"wall_ms", relay.wall_ms},
        {"candidate_loaded", relay.candidate_loaded},
        {"timing_check", std::move(timing_check)}};
    add_layers(doc, options, *worker, nonce);
  });
  if (ending.status)
    out.set_status(*ending.status, ending.message);
  else
    out.set_status(parsed->status, parsed->message);
  if (!violations.empty()) {
    std::string detail = violations.front();
    for (size_t i = 1; i < violations.size(); ++i)
      detail += "; " + violations[i];
    out.add_finding("timing_forged", detail);
  }
  if (Status written = out.write(); !written) {
    std::fprintf(stderr, "stitch-runner: cannot write runner.json: %s\n",
                 written.error().message.c_str());
    return kExitReportUnwritable;
  }
  if (ending.status)
    std::fprintf(stderr, "stitch-runner: %s: %s\n", std::string(enum_name(*ending.status)).c_str(),
                 ending.message.c_str());
  return exit_code_for(out.status());
}

}  // namespace stitch::runner
