// K samples of one step at once: K requests sent concurrently (one thread each, at most
// `max_parallel` in flight), their replies or errors returned by sample index whatever order they
// complete in, so a run records its samples in a stable order.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "llm/chat.h"

namespace stitch::llm {

// K copies of `request` for K samples: labels "<label>-sample-NN" (label empty: "sample-NN") and,
// when the request sets a seed, seeds seed, seed+1, … so that samples differ yet replay.
std::vector<ChatRequest> sample_requests(const ChatRequest& request, int k);

// Sends requests[i] through client_for(i) (one client per sample lets each write its own
// transcript directory; the same client for all works too: HttpChatClient is thread-safe).
// Result i belongs to requests[i]. max_parallel 0: all at once.
std::vector<Result<ChatReply>> complete_in_parallel(
    const std::vector<ChatRequest>& requests, const std::function<ChatClient&(size_t)>& client_for,
    size_t max_parallel = 0);

}  // namespace stitch::llm
