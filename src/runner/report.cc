// runner.json building and writing; see report.h for the format.
#include "runner/report.h"

#include <cstdio>

#include "util/fs.h"

namespace stitch::runner {

namespace {
constexpr int kMaxFindingsPerKind = 8;
}  // namespace

int exit_code_for(RunStatus status) {
  switch (status) {
    case RunStatus::ok:
      return kExitOk;
    case RunStatus::timeout:
      return kExitTimeout;
    case RunStatus::no_device:
      return kExitNoDevice;
    case RunStatus::setup_failed:
      return kExitSetupFailed;
    default:
      return kExitCandidateFailed;
  }
}

ReportBuilder::ReportBuilder(std::filesystem::path result_path) : path_(std::move(result_path)) {
  doc_ = {{"format", "stitchcuda.runner"},
          {"version", 1},
          {"status", "ok"},
          {"message", ""},
          {"phase", "setup"},
          {"findings", nlohmann::json::array()},
          {"check_sets", nlohmann::json::array()}};
}

void ReportBuilder::add_finding(std::string_view kind, std::string detail, bool fatal) {
  std::lock_guard<std::mutex> lock(mutex_);
  int same_kind = 0;
  for (const auto& finding : doc_["findings"]) {
    if (finding["kind"] != kind) continue;
    if (finding["detail"] == detail) return;
    ++same_kind;
  }
  if (same_kind >= kMaxFindingsPerKind) return;
  doc_["findings"].push_back({{"kind", kind}, {"detail", std::move(detail)}, {"fatal", fatal}});
}

bool ReportBuilder::has_finding(std::string_view kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& finding : doc_["findings"])
    if (finding["kind"] == kind) return true;
  return false;
}

void ReportBuilder::set_status(RunStatus status, std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_ = status;
  doc_["status"] = enum_name(status);
  doc_["message"] = std::move(message);
}

RunStatus ReportBuilder::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

void ReportBuilder::set_phase(std::string phase) {
  std::lock_guard<std::mutex> lock(mutex_);
  doc_["phase"] = std::move(phase);
}

void ReportBuilder::mark(MarkKind kind, int iteration) {
  if (!channel_) return;
  Status sent = channel_->send_mark({kind, iteration});
  if (!sent) std::fprintf(stderr, "stitch-runner: %s\n", sent.error().message.c_str());
}

Status ReportBuilder::write() {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Program-supplied text (stitch_last_error, kernel names) may hold invalid UTF-8.
    text = doc_.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  if (channel_) return channel_->send_report(text);
  if (path_.empty()) {  // --self-test without --result: the document goes to stdout
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    return {};
  }
  return write_file_atomic(path_, text + "\n");
}

}  // namespace stitch::runner
