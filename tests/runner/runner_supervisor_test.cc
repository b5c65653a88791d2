// stitch-runner's supervisor (runner/supervisor.h) with fake workers, in real forked processes and
// (where this process may create them: root) a real PID namespace: runner.json written by the
// supervisor with the nonce; garbage, oversized frames, invalid reports, raw exit_group, SIGKILL,
// abort, a worker that reports after the candidate loaded that the machine failed, forged timings;
// a worker with no trace of the nonce; a deadline; the worker dies with its supervisor.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runner/report.h"
#include "runner/sandbox.h"
#include "runner/supervisor.h"
#include "support/sandbox_layers.h"
#include "util/fs.h"
#include "util/pid_namespace.h"
#include "verify/judge/runner_client.h"

namespace stitch::runner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kNonceChars = 32;

std::string report_json(const std::string& status, const std::vector<double>& times = {},
                        const std::string& message = "") {
  json doc = {{"format", "stitchcuda.runner"},
              {"version", 1},
              {"status", status},
              {"message", message},
              {"phase", "timing"},
              {"findings", json::array()},
              {"check_sets", json::array()},
              // Every required layer set up, as a real worker's isolation reports them: the
              // fail-closed check must not be what decides these cases.
              {"sandbox", json::parse(test_support::complete_sandbox_json())}};
  if (!times.empty()) doc["timing"] = {{"gpu_ms", times}, {"synced_ms", times}, {"wall_ms", times}};
  return doc.dump();
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// `calls` timed calls of `call_ms` each, marked; returns the worker's own wall times.
std::vector<double> marked_calls(WorkerChannel& channel, int calls, int call_ms) {
  std::vector<double> wall;
  (void)channel.send_mark({MarkKind::timed_loop_begin, 0});
  for (int i = 0; i < calls; ++i) {
    EXPECT_TRUE(channel.send_mark({MarkKind::call_begin, i}).ok());
    auto start = std::chrono::steady_clock::now();
    sleep_ms(call_ms);
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    EXPECT_TRUE(channel.send_mark({MarkKind::call_end, i}).ok());
    sleep_ms(2);  // the runner's checks between calls
  }
  (void)channel.send_mark({MarkKind::timed_loop_end, 0});
  return wall;
}

struct Supervised {
  int exit_code = -1;
  int term_signal = 0;
  json doc;  // runner.json; null when missing or invalid
  pid_t supervisor = -1;
};

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("runner_supervisor_test_{}_{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.result = dir_ / "runner.json";
    options_.worker_pid_namespace = WorkerPidNamespace::own;
    options_.orchestrator_pid_namespace = pid_namespace_id();
    // The nonce is never whole in this process's memory while a worker runs: masked and mask.
    ASSERT_EQ(getrandom(mask_.data(), mask_.size(), 0), static_cast<ssize_t>(mask_.size()));
    std::array<unsigned char, kNonceChars> raw{};
    ASSERT_EQ(getrandom(raw.data(), raw.size(), 0), static_cast<ssize_t>(raw.size()));
    for (size_t i = 0; i < kNonceChars; ++i)
      masked_[i] = static_cast<unsigned char>("0123456789abcdef"[raw[i] % 16] ^ mask_[i]);
    explicit_bzero(raw.data(), raw.size());
  }
  void TearDown() override { fs::remove_all(dir_); }

  bool needs_own_namespace() { return can_create_pid_namespace(); }

  // Only after the run: the nonce as a string.
  std::string nonce() const {
    std::string text(kNonceChars, '\0');
    for (size_t i = 0; i < kNonceChars; ++i)
      text[i] = static_cast<char>(masked_[i] ^ mask_[i]);
    return text;
  }

  // Whether `data` holds the nonce anywhere, without ever materialising it.
  bool holds_nonce(const unsigned char* data, size_t size) const {
    for (size_t i = 0; i + kNonceChars <= size; ++i) {
      size_t k = 0;
      while (k < kNonceChars && (data[i + k] ^ mask_[k]) == masked_[k])
        ++k;
      if (k == kNonceChars) return true;
    }
    return false;
  }

  // Runs supervise() in a child with the nonce on its stdin; `while_running` gets its pid.
  Supervised supervised(const WorkerEntry& worker,
                        const std::function<void(pid_t)>& while_running = {}) {
    int ends[2];
    EXPECT_EQ(pipe2(ends, O_CLOEXEC), 0);
    struct stat pipe_stat {};
    fstat(ends[0], &pipe_stat);
    stdin_inode_ = pipe_stat.st_ino;
    char line[kNonceChars + 1];
    for (size_t i = 0; i < kNonceChars; ++i)
      line[i] = static_cast<char>(masked_[i] ^ mask_[i]);
    line[kNonceChars] = '\n';
    EXPECT_EQ(write(ends[1], line, sizeof line), static_cast<ssize_t>(sizeof line));
    explicit_bzero(line, sizeof line);
    ::close(ends[1]);
    pid_t pid = fork();
    if (pid == 0) {
      dup2(ends[0], 0);
      ::close(ends[0]);
      SecretNonce secret;
      if (!secret.read_line(0)) _exit(100);
      _exit(supervise(options_, secret, worker));
    }
    ::close(ends[0]);
    Supervised result;
    result.supervisor = pid;
    if (while_running) while_running(pid);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
    auto text = read_file(options_.result);
    if (text) result.doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (result.doc.is_discarded()) result.doc = json();
    return result;
  }

  // In a worker: whether stdin is the nonce's pipe, whether the nonce is anywhere in the worker's
  // readable memory (through /proc/self/mem: no faults on odd pages), the descriptors it holds.
  std::string observe_worker() const {
    struct stat in {};
    fstat(0, &in);
    size_t fds = 0;
    for (const auto& entry : fs::directory_iterator("/proc/self/fd"))
      fds += entry.path().filename().string().empty() ? 0 : 1;
    bool found = false;
    size_t scanned = 0;
    std::ifstream maps("/proc/self/maps");
    int mem = ::open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    std::vector<unsigned char> chunk(1 << 20);
    for (std::string line; !found && std::getline(maps, line);) {
      unsigned long begin = 0, end = 0;
      char perms[5] = {};
      if (std::sscanf(line.c_str(), "%lx-%lx %4s", &begin, &end, perms) != 3 || perms[0] != 'r')
        continue;
      for (unsigned long at = begin; at < end && !found; at += chunk.size() - kNonceChars) {
        ssize_t n = pread(mem, chunk.data(), std::min<size_t>(chunk.size(), end - at),
                          static_cast<off_t>(at));
        if (n <= 0) break;
        scanned += static_cast<size_t>(n);
        found = holds_nonce(chunk.data(), static_cast<size_t>(n));
        if (static_cast<size_t>(n) < chunk.size()) break;
      }
    }
    ::close(mem);
    return fmt::format("stdin_is_pipe={} nonce_found={} scanned_mb={} fds={}",
                       in.st_ino == stdin_inode_, found, scanned >> 20, fds);
  }

  RunnerVerdict classify(const Supervised& run) {
    ProcessResult process;
    process.exit_code = run.exit_code;
    process.term_signal = run.term_signal;
    return classify_runner_run(process, read_runner_report(options_.result), nonce());
  }

  static const json* layer(const json& doc, const std::string& name) {
    for (const json& entry : doc["sandbox"]["layers"])
      if (entry["name"] == name) return &entry;
    return nullptr;
  }

  fs::path dir_;
  SupervisorOptions options_;
  std::array<unsigned char, kNonceChars> masked_{}, mask_{};
  ino_t stdin_inode_ = 0;
};

TEST_F(SupervisorTest, HonestWorkerGetsItsReportWrittenWithTheNonce) {
  if (!needs_own_namespace()) GTEST_SKIP() << "no permission to create PID namespaces";
  Supervised run = supervised([](WorkerChannel& channel) {
    (void)channel.send_mark({MarkKind::candidate_loading, 0});
    std::vector<double> wall = marked_calls(channel, 4, 5);
    std::string message = fmt::format("pid {}", getpid());
    (void)channel.send_report(report_json("ok", wall, message));
    return kExitOk;
  });
  ASSERT_EQ(run.exit_code, kExitOk);
  ASSERT_TRUE(run.doc.is_object());
  EXPECT_EQ(run.doc["status"], "ok");
  EXPECT_EQ(run.doc["message"], "pid 1");  // PID 1 of its own namespace
  EXPECT_EQ(run.doc["nonce"], nonce());
  EXPECT_TRUE(run.doc["findings"].empty()) << run.doc["findings"].dump();
  const json& check = run.doc["supervisor"]["timing_check"];
  EXPECT_EQ(check["calls"], 4);
  EXPECT_TRUE(check["passed"].get<bool>()) << check.dump();
  EXPECT_GT(check["loop_ms"].get<double>(), 20.0);
  const json* pid_layer = layer(run.doc, "pid_namespace");
  ASSERT_NE(pid_layer, nullptr);
  EXPECT_TRUE((*pid_layer)["set_up"].get<bool>()) << pid_layer->dump();
  const json* supervisor_layer = layer(run.doc, "supervisor");
  ASSERT_NE(supervisor_layer, nullptr);
  EXPECT_TRUE((*supervisor_layer)["set_up"].get<bool>());
  EXPECT_EQ(classify(run).outcome, Outcome::passed) << classify(run).reason;
}

TEST_F(SupervisorTest, WorkerClaimsOfTheSupervisorsFieldsAreReplaced) {
  options_.worker_pid_namespace = WorkerPidNamespace::inherit;
  Supervised run = supervised([](WorkerChannel& channel) {
    json doc = json::parse(report_json("ok"));
    doc["nonce"] = "guessed";
    doc["sandbox"]["layers"] = {{{"name", "pid_namespace"}, {"set_up", true}, {"detail", "x"}},
                                {{"name", "landlock"}, {"set_up", true}, {"detail", "y"}}};
    (void)channel.send_report(doc.dump());
    return kExitOk;
  });
  ASSERT_TRUE(run.doc.is_object());
  EXPECT_EQ(run.doc["nonce"], nonce());
  const json* pid_layer = layer(run.doc, "pid_namespace");
  ASSERT_NE(pid_layer, nullptr);
  // Same namespace as this test (the "orchestrator"), no namespace of the worker's own.
  EXPECT_FALSE((*pid_layer)["set_up"].get<bool>()) << pid_layer->dump();
  EXPECT_NE(layer(run.doc, "landlock"), nullptr);  // another layer's entry passes through
  EXPECT_EQ(run.doc["sandbox"]["layers"].size(), 3u);
}

TEST_F(SupervisorTest, GarbageAfterAReportEndsCrashed) {
  Supervised run = supervised([](WorkerChannel& channel) {
    (void)channel.send_report(report_json("ok"));
    (void)send_all(channel.fd(), "garbage that is no frame");
    sleep_ms(5000);  // killed by the supervisor long before
    return kExitOk;
  });
  EXPECT_EQ(run.exit_code, kExitCandidateFailed);
  ASSERT_TRUE(run.doc.is_object());
  EXPECT_EQ(run.doc["status"], "crashed");
  EXPECT_NE(run.doc["message"].get<std::string>().find("protocol"), std::string::npos);
  EXPECT_EQ(run.doc["nonce"], nonce());
  EXPECT_EQ(run.doc["supervisor"]["worker"]["signal"], SIGKILL);
  RunnerVerdict verdict = classify(run);
  EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
  EXPECT_FALSE(verdict.runner_fault);
}

TEST_F(SupervisorTest, OversizedFrameAndInvalidReportEndCrashed) {
  Supervised oversized = supervised([](WorkerChannel& channel) {
    std::string header = encode_frame(FrameType::report, "");
    uint32_t length = 0xffffffffu;
    std::memcpy(header.data() + 8, &length, sizeof length);
    (void)send_all(channel.fd(), header);
    sleep_ms(5000);
    return kExitOk;
  });
  ASSERT_TRUE(oversized.doc.is_object());
  EXPECT_EQ(oversized.doc["status"], "crashed");
  EXPECT_EQ(oversized.doc["nonce"], nonce());

  Supervised invalid = supervised([](WorkerChannel& channel) {
    (void)channel.send_report(R"({"format": "stitchcuda.runner", "version": 1, "status": "won"})");
    return kExitOk;
  });
  ASSERT_TRUE(invalid.doc.is_object());
  EXPECT_EQ(invalid.doc["status"], "crashed");
  EXPECT_NE(invalid.doc["message"].get<std::string>().find("not a valid runner.json"),
            std::string::npos);
  EXPECT_FALSE(classify(invalid).runner_fault);
}

TEST_F(SupervisorTest, RawExitGroupBeforeAReportIsTheCandidatesRuntimeError) {
  Supervised run = supervised([](WorkerChannel& channel) {
    (void)channel.send_mark({MarkKind::candidate_loading, 0});
    syscall(SYS_exit_group, 0);
    return kExitOk;
  });
  EXPECT_EQ(run.exit_code, kExitCandidateFailed);
  ASSERT_TRUE(run.doc.is_object());
  EXPECT_EQ(run.doc["status"], "crashed");
  EXPECT_NE(run.doc["message"].get<std::string>().find("exited with code 0 without a report"),
            std::string::npos)
      << run.doc["message"];
  RunnerVerdict verdict = classify(run);
  EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
  EXPECT_FALSE(verdict.runner_fault);
}

TEST_F(SupervisorTest, SigkillAndAbortOfTheWorkerAreCrashes) {
  // As PID 1 of its own namespace a worker cannot SIGKILL itself; in the verification's namespace
  // (the judge's) it can, and that is what this covers.
  options_.worker_pid_namespace = WorkerPidNamespace::inherit;
  Supervised killed = supervised([](WorkerChannel&) {
    kill(getpid(), SIGKILL);
    return kExitOk;
  });
  ASSERT_TRUE(killed.doc.is_object());
  EXPECT_EQ(killed.doc["status"], "crashed");
  EXPECT_NE(killed.doc["message"].get<std::string>().find("died of SIGKILL"), std::string::npos);
  EXPECT_EQ(classify(killed).outcome, Outcome::runtime_error);

  Supervised aborted = supervised([](WorkerChannel& channel) {
    (void)channel.send_report(report_json("ok"));  // a report, then a crash in cleanup
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    abort();
    return kExitOk;
  });
  ASSERT_TRUE(aborted.doc.is_object());
  EXPECT_EQ(aborted.doc["status"], "crashed");
  EXPECT_NE(aborted.doc["message"].get<std::string>().find("SIGABRT after its report"),
            std::string::npos)
      << aborted.doc["message"];
  EXPECT_EQ(classify(aborted).outcome, Outcome::runtime_error);
}

TEST_F(SupervisorTest, MachineFailuresClaimedAfterTheCandidateLoadedAreNotTrusted) {
  Supervised before_load = supervised([](WorkerChannel& channel) {
    (void)channel.send_report(report_json("setup_failed", {}, "slots.json unreadable"));
    return kExitSetupFailed;
  });
  ASSERT_TRUE(before_load.doc.is_object());
  EXPECT_EQ(before_load.doc["status"], "setup_failed");
  EXPECT_TRUE(classify(before_load).runner_fault);

  Supervised after_load = supervised([](WorkerChannel& channel) {
    (void)channel.send_mark({MarkKind::candidate_loading, 0});
    (void)channel.send_report(report_json("no_device", {}, "no CUDA device, honestly"));
    return kExitNoDevice;
  });
  ASSERT_TRUE(after_load.doc.is_object());
  EXPECT_EQ(after_load.doc["status"], "crashed");
  RunnerVerdict verdict = classify(after_load);
  EXPECT_EQ(verdict.outcome, Outcome::runtime_error);
  EXPECT_FALSE(verdict.runner_fault);
}

TEST_F(SupervisorTest, TimingsTenTimesSmallerThanTheMarksAreForged) {
  Supervised run = supervised([](WorkerChannel& channel) {
    (void)channel.send_mark({MarkKind::candidate_loading, 0});
    std::vector<double> wall = marked_calls(channel, 5, 20);
    for (double& ms : wall)
      ms /= 10;  // the patched numbers
    (void)channel.send_report(report_json("ok", wall));
    return kExitOk;
  });
  ASSERT_TRUE(run.doc.is_object());
  EXPECT_EQ(run.doc["status"], "ok");
  ASSERT_EQ(run.doc["findings"].size(), 1u) << run.doc.dump(1);
  EXPECT_EQ(run.doc["findings"][0]["kind"], "timing_forged");
  EXPECT_TRUE(run.doc["findings"][0]["fatal"].get<bool>());
  EXPECT_FALSE(run.doc["supervisor"]["timing_check"]["passed"].get<bool>());
  RunnerVerdict verdict = classify(run);
  EXPECT_EQ(verdict.outcome, Outcome::hacked);
  EXPECT_NE(verdict.reason.find("timing_forged"), std::string::npos) << verdict.reason;
}

TEST_F(SupervisorTest, TimingsOfCallsThatWereNeverMarkedAreForged) {
  Supervised run = supervised([](WorkerChannel& channel) {
    (void)channel.send_report(report_json("ok", {1.0, 1.0}));
    return kExitOk;
  });
  ASSERT_TRUE(run.doc.is_object());
  ASSERT_EQ(run.doc["findings"].size(), 1u);
  EXPECT_EQ(run.doc["findings"][0]["kind"], "timing_forged");
}

TEST_F(SupervisorTest, TheWorkerHoldsNoTraceOfTheNonce) {
  Supervised run = supervised([this](WorkerChannel& channel) {
    (void)channel.send_report(report_json("ok", {}, observe_worker()));
    return kExitOk;
  });
  ASSERT_TRUE(run.doc.is_object());
  std::string message = run.doc["message"];
  EXPECT_NE(message.find("stdin_is_pipe=false"), std::string::npos) << message;
  EXPECT_NE(message.find("nonce_found=false"), std::string::npos) << message;
  // 0, 1, 2, the channel, and the directory being listed.
  EXPECT_NE(message.find("fds=5"), std::string::npos) << message;
  EXPECT_EQ(message.find("scanned_mb=0 "), std::string::npos) << message;  // it did scan
  EXPECT_EQ(run.doc["nonce"], nonce());
}

TEST_F(SupervisorTest, TheScanFindsANonceThatIsThere) {
  // The check above would pass on a scan that finds nothing: the same scan, nonce planted.
  Supervised run = supervised([this](WorkerChannel& channel) {
    std::string planted = nonce();
    std::string message = observe_worker();
    explicit_bzero(planted.data(), planted.size());
    (void)channel.send_report(report_json("ok", {}, message));
    return kExitOk;
  });
  ASSERT_TRUE(run.doc.is_object());
  EXPECT_NE(run.doc["message"].get<std::string>().find("nonce_found=true"), std::string::npos)
      << run.doc["message"];
}

TEST_F(SupervisorTest, TheDeadlineKillsAHangingWorker) {
  options_.deadline_s = 0.3;
  auto start = std::chrono::steady_clock::now();
  Supervised run = supervised([](WorkerChannel&) {
    sleep_ms(30000);
    return kExitOk;
  });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10);
  EXPECT_EQ(run.exit_code, kExitTimeout);
  ASSERT_TRUE(run.doc.is_object());
  EXPECT_EQ(run.doc["status"], "timeout");
  EXPECT_TRUE(run.doc["supervisor"]["timed_out"].get<bool>());
  EXPECT_EQ(classify(run).outcome, Outcome::timeout);
}

// The worker's pid as this process sees it: the supervisor's only child.
pid_t child_of(pid_t parent) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::ifstream children(fmt::format("/proc/{}/task/{}/children", parent, parent));
    pid_t child = 0;
    if (children >> child && child > 0) return child;
    sleep_ms(10);
  }
  return -1;
}

bool gone(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text;
  if (!std::getline(stat, text)) return true;
  size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

TEST_F(SupervisorTest, KillingTheSupervisorKillsTheWorker) {
  if (!needs_own_namespace()) GTEST_SKIP() << "no permission to create PID namespaces";
  pid_t worker = -1;
  bool worker_gone = false;
  Supervised run = supervised(
      [](WorkerChannel&) {
        sleep_ms(30000);
        return kExitOk;
      },
      [&](pid_t supervisor) {
        worker = child_of(supervisor);
        kill(supervisor, SIGKILL);
        for (int i = 0; i < 500 && !worker_gone; ++i) {
          worker_gone = worker > 0 && gone(worker);
          if (!worker_gone) sleep_ms(10);
        }
      });
  EXPECT_EQ(run.term_signal, SIGKILL);
  ASSERT_GT(worker, 0);
  EXPECT_TRUE(worker_gone) << "worker " << worker << " outlived its supervisor";
  EXPECT_TRUE(run.doc.is_null());  // nothing written: the orchestrator classifies the kill
}

// The runner lives in the judge's namespace but sees the host's /proc: its children must still be
// found (hidden_work) and killed. Here: PID 1 of a fresh namespace with one child.
TEST(ChildProcessesInANamespace, AreFoundAndKilledWhateverProcNumbersThem) {
  if (!can_create_pid_namespace()) GTEST_SKIP() << "no permission to create PID namespaces";
  pid_t outer = fork();
  if (outer == 0) {
    if (unshare(CLONE_NEWPID) != 0) _exit(10);
    pid_t init = fork();
    if (init == 0) {  // PID 1 of the namespace
      pid_t child = fork();
      if (child == 0) {
        pause();
        _exit(0);
      }
      std::vector<int> found = list_child_processes();
      if (found.size() != 1) _exit(11);
      if (found[0] == child) _exit(12);  // /proc's number, not ours: the test would be empty
      if (pid_in_own_namespace(found[0]) != child) _exit(13);
      kill_processes(found);
      if (kill(child, 0) == 0 || errno != ESRCH) _exit(14);  // killed and reaped
      _exit(0);
    }
    int status = 0;
    waitpid(init, &status, 0);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 20);
  }
  int status = 0;
  waitpid(outer, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "step that failed (see the test)";
}

}  // namespace
}  // namespace stitch::runner
