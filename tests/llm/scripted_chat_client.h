// A ChatClient for tests: answers from a script, one reply per request, and keeps every request.
// An Error in the script is returned as the client's failure.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "llm/chat.h"

namespace stitch::llm::testing {

inline ChatReply text_reply(std::string content, FinishReason finish = FinishReason::stop,
                            int64_t prompt_tokens = 100, int64_t completion_tokens = 50) {
  ChatReply reply;
  reply.content = std::move(content);
  reply.finish = finish;
  reply.usage = {prompt_tokens, completion_tokens, 0};
  reply.model = "scripted";
  return reply;
}

class ScriptedChatClient final : public ChatClient {
 public:
  explicit ScriptedChatClient(std::vector<Result<ChatReply>> script)
      : script_(script.begin(), script.end()) {}

  Result<ChatReply> complete(const ChatRequest& request) override {
    requests.push_back(request);
    if (script_.empty()) return make_error(ErrorKind::machine, "the script has no reply left");
    Result<ChatReply> next = script_.front();
    script_.pop_front();
    return next;
  }
  size_t left() const { return script_.size(); }

  std::vector<ChatRequest> requests;

 private:
  std::deque<Result<ChatReply>> script_;
};

// Forwards to a client the fixture keeps (a Coder owns the clients it makes), so the fixture can
// read the requests afterwards.
class ForwardingChatClient final : public ChatClient {
 public:
  explicit ForwardingChatClient(ChatClient& target) : target_(target) {}
  Result<ChatReply> complete(const ChatRequest& request) override {
    return target_.complete(request);
  }

 private:
  ChatClient& target_;
};

}  // namespace stitch::llm::testing
