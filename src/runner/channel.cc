// The supervisor-worker channel's framing; see channel.h.
#include "runner/channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace stitch::runner {
namespace {

struct Header {
  uint32_t magic;
  uint16_t type;
  uint16_t reserved;
  uint32_t length;
};
static_assert(sizeof(Header) == kFrameHeaderBytes);

// A mark on the wire: no padding left uninitialised.
struct WireMark {
  uint8_t kind;
  uint8_t reserved[3];
  int32_t iteration;
};
static_assert(sizeof(WireMark) == 8);

size_t payload_limit(FrameType type) {
  switch (type) {
    case FrameType::report:
      return kMaxReportBytes;
    case FrameType::mark:
      return sizeof(WireMark);
    case FrameType::ack:
      return 0;
  }
  return 0;
}

bool known_type(uint16_t type) {
  return type >= static_cast<uint16_t>(FrameType::report) &&
         type <= static_cast<uint16_t>(FrameType::ack);
}

// Reads exactly `size` bytes before `deadline`.
Status read_exact(int fd, char* data, size_t size, std::chrono::steady_clock::time_point deadline) {
  size_t got = 0;
  while (got < size) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return make_error("channel: no answer from the supervisor in time");
    pollfd entry{fd, POLLIN, 0};
    int ready = poll(&entry, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return make_error("channel: poll: {}", std::strerror(errno));
    if (ready == 0) continue;
    ssize_t n = ::read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("channel: the supervisor closed the channel");
    got += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

std::string encode_frame(FrameType type, std::string_view payload) {
  Header header{kFrameMagic, static_cast<uint16_t>(type), 0, static_cast<uint32_t>(payload.size())};
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes.append(payload);
  return bytes;
}

std::string encode_mark(const Mark& mark) {
  WireMark wire{static_cast<uint8_t>(mark.kind), {0, 0, 0}, mark.iteration};
  return std::string(reinterpret_cast<const char*>(&wire), sizeof wire);
}

Result<Mark> decode_mark(std::string_view payload) {
  if (payload.size() != sizeof(WireMark))
    return make_error("channel: a mark of {} bytes (expected {})", payload.size(),
                      sizeof(WireMark));
  WireMark wire;
  std::memcpy(&wire, payload.data(), sizeof wire);
  if (wire.kind >= kMarkKindNames.size())
    return make_error("channel: unknown mark kind {}", static_cast<int>(wire.kind));
  if (wire.iteration < 0) return make_error("channel: negative iteration {}", wire.iteration);
  return Mark{static_cast<MarkKind>(wire.kind), wire.iteration};
}

void FrameDecoder::append(std::string_view bytes) {
  if (!failed_) buffer_.append(bytes);
}

Result<std::optional<Frame>> FrameDecoder::next() {
  if (failed_) return *failed_;
  if (buffer_.size() < kFrameHeaderBytes) return std::optional<Frame>();
  Header header;
  std::memcpy(&header, buffer_.data(), sizeof header);
  std::optional<Error> problem;
  if (header.magic != kFrameMagic || header.reserved != 0)
    problem = make_error("channel: not a frame (bad magic)");
  else if (!known_type(header.type))
    problem = make_error("channel: unknown frame type {}", header.type);
  else if (header.length > payload_limit(static_cast<FrameType>(header.type)))
    problem = make_error("channel: a frame of type {} with {} bytes (at most {})", header.type,
                         header.length, payload_limit(static_cast<FrameType>(header.type)));
  if (problem) {
    failed_ = *problem;
    buffer_.clear();
    return *problem;
  }
  if (buffer_.size() < kFrameHeaderBytes + header.length) return std::optional<Frame>();
  Frame frame{static_cast<FrameType>(header.type),
              buffer_.substr(kFrameHeaderBytes, header.length)};
  buffer_.erase(0, kFrameHeaderBytes + header.length);
  return std::optional<Frame>(std::move(frame));
}

Status send_all(int fd, std::string_view bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error("channel: send: {}", std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  return {};
}

Status WorkerChannel::send_frame(FrameType type, std::string_view payload) {
  std::lock_guard<std::mutex> lock(send_mutex_);
  return send_all(fd_, encode_frame(type, payload));
}

Status WorkerChannel::send_report(std::string_view json_text) {
  if (json_text.size() > kMaxReportBytes)
    return make_error("channel: runner.json is {} bytes (at most {})", json_text.size(),
                      kMaxReportBytes);
  return send_frame(FrameType::report, json_text);
}

Status WorkerChannel::send_mark(const Mark& mark, double ack_timeout_s) {
  STITCH_TRY(send_frame(FrameType::mark, encode_mark(mark)));
  if (mark.kind != MarkKind::call_begin && mark.kind != MarkKind::probe_begin) return {};
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(ack_timeout_s));
  char header[kFrameHeaderBytes];
  STITCH_TRY(read_exact(fd_, header, sizeof header, deadline));
  if (std::string_view(header, sizeof header) != encode_frame(FrameType::ack, ""))
    return make_error("channel: the supervisor answered a mark with something else than an ack");
  return {};
}

}  // namespace stitch::runner
