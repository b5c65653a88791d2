// Helpers for tests of child processes: temporary directories, pid files a child writes, and
// whether a process or a whole process group is still alive (a zombie counts as gone: it waits for
// a reaper that may not be us).
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace stitch::test_support {

inline std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return made ? std::filesystem::path(made) : std::filesystem::path();
}

// The fields of /proc/PID/stat after the command name: state, ppid, pgrp. Empty state: no such
// process.
struct ProcStat {
  char state = 0;
  pid_t group = 0;
};

inline ProcStat read_proc_stat(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  ProcStat result;
  if (close == std::string::npos || close + 2 >= line.size()) return result;
  char state = 0;
  pid_t ppid = 0, group = 0;
  if (std::sscanf(line.c_str() + close + 2, "%c %d %d", &state, &ppid, &group) == 3)
    result = {state, group};
  return result;
}

// Waits up to 5 s for `pid` to be gone.
inline bool process_gone(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    if (read_proc_stat(std::to_string(pid)).state == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

inline bool group_has_live_member(pid_t group) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    ProcStat stat = read_proc_stat(name);
    if (stat.group == group && stat.state != 0 && stat.state != 'Z') return true;
  }
  return false;
}

// Waits up to 5 s for every process of `group` to be gone.
inline bool group_gone(pid_t group) {
  for (int i = 0; i < 500; ++i) {
    if (!group_has_live_member(group)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The pid a child wrote to `path`, waiting up to 5 s for it; -1 when none came.
inline pid_t read_pid(const std::filesystem::path& path) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(path);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

}  // namespace stitch::test_support
