#include "llm/parallel_samples.h"

#include <fmt/format.h>

#include <atomic>
#include <optional>
#include <thread>

namespace stitch::llm {

std::vector<ChatRequest> sample_requests(const ChatRequest& request, int k) {
  std::vector<ChatRequest> out;
  for (int i = 0; i < k; ++i) {
    ChatRequest sample = request;
    sample.label = request.label.empty() ? fmt::format("sample-{:02}", i)
                                         : fmt::format("{}-sample-{:02}", request.label, i);
    if (request.seed) sample.seed = *request.seed + i;
    out.push_back(std::move(sample));
  }
  return out;
}

std::vector<Result<ChatReply>> complete_in_parallel(
    const std::vector<ChatRequest>& requests, const std::function<ChatClient&(size_t)>& client_for,
    size_t max_parallel) {
  const size_t count = requests.size();
  std::vector<std::optional<Result<ChatReply>>> slots(count);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++)
      slots[i].emplace(client_for(i).complete(requests[i]));
  };
  size_t threads = max_parallel == 0 ? count : std::min(count, max_parallel);
  {
    std::vector<std::jthread> pool;
    for (size_t t = 0; t < threads; ++t)
      pool.emplace_back(worker);
  }  // joined here
  std::vector<Result<ChatReply>> out;
  out.reserve(count);
  for (auto& slot : slots)
    out.push_back(std::move(*slot));
  return out;
}

}  // namespace stitch::llm
