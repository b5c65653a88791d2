// The channel between stitch-runner's supervisor and its worker (docs/verify-protocol.md
// "Supervisor and worker"): one end of a socketpair each, framed messages both ways. CUDA-free.
//
// A frame is a 12-byte header — magic "STCH", type (u16), reserved (u16, 0), payload length
// (u32), all little-endian as the host writes them (both ends are the same binary) — and the
// payload. The worker sends
//   report  runner.json's text as the worker built it (JSON object, at most kMaxReportBytes); the
//           last one received counts (the watchdog may send one while the main thread is stuck);
//   mark    a Mark (8 bytes): the supervisor timestamps it with its own CLOCK_MONOTONIC on
//           receipt. `call_begin` marks are answered with an `ack` frame and the worker waits for
//           it before it starts the call, so the supervisor's timestamp is never later than the
//           call's start; `call_end` is sent after the call's device synchronize, so its receipt is
//           never earlier than the call's end. Each supervisor interval therefore contains the
//           call whatever the scheduler does. `probe_begin` / `probe_end` pairs do the same around
//           no work, before the timed loop: what an interval holds besides the call, at the
//           machine's present load (timing_check.h).
// Anything else — a bad magic, an unknown type, an oversized or short payload — is a protocol
// violation: the supervisor stops listening, kills the worker and reports it (status crashed).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::runner {

inline constexpr uint32_t kFrameMagic = 0x48435453;  // "STCH"
inline constexpr size_t kFrameHeaderBytes = 12;
inline constexpr size_t kMaxReportBytes = 16u << 20;

enum class FrameType : uint16_t { report = 1, mark = 2, ack = 3 };

enum class MarkKind : uint8_t {
  candidate_loading,  // right before dlopen of the candidate: from here on the worker is not ours
  timed_loop_begin,   // before the first timed iteration
  timed_loop_end,     // after the last one
  call_begin,         // a timed call is about to start (acknowledged)
  call_end,           // a timed call and its device synchronize have finished
  probe_begin,        // as call_begin (acknowledged), around no work: the channel's own latency
  probe_end,          // as call_end, right after its probe_begin was acknowledged
};
inline constexpr std::array<std::string_view, 7> kMarkKindNames = {
    "candidate_loading", "timed_loop_begin", "timed_loop_end", "call_begin", "call_end",
    "probe_begin",       "probe_end"};
constexpr const auto& enum_names(MarkKind) {
  return kMarkKindNames;
}
static_assert(names_every_enumerator(MarkKind::probe_end));

struct Mark {
  MarkKind kind = MarkKind::call_begin;
  int32_t iteration = 0;  // timed iteration (calls); 0 otherwise
};

struct Frame {
  FrameType type = FrameType::report;
  std::string payload;
};

// Bytes of one frame (header + payload).
std::string encode_frame(FrameType type, std::string_view payload);
std::string encode_mark(const Mark& mark);
// A mark frame's payload; an Error when it is not one.
Result<Mark> decode_mark(std::string_view payload);

// Reassembles frames from a byte stream. After an Error every later call fails too.
class FrameDecoder {
 public:
  void append(std::string_view bytes);
  // The next complete frame, nullopt when more bytes are needed, an Error on a protocol violation.
  Result<std::optional<Frame>> next();

 private:
  std::string buffer_;
  std::optional<Error> failed_;
};

// The worker's end: frames out (from any thread), acks in.
class WorkerChannel {
 public:
  explicit WorkerChannel(int fd) : fd_(fd) {}
  int fd() const { return fd_; }

  Status send_report(std::string_view json_text);
  // Sends `mark`; a call_begin waits (at most `ack_timeout_s`) for the supervisor's ack.
  Status send_mark(const Mark& mark, double ack_timeout_s = 10);

 private:
  Status send_frame(FrameType type, std::string_view payload);

  int fd_;
  std::mutex send_mutex_;
};

// Writes all of `bytes` to a socket (MSG_NOSIGNAL, retrying on EINTR and short writes).
Status send_all(int fd, std::string_view bytes);

}  // namespace stitch::runner
