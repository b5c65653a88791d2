// The real loop's chat clients (chat_clients.h).
#include "app/chat_clients.h"

#include "llm/http_chat_client.h"

namespace stitch::app {

agents::ChatClientFactory default_chat_client_factory() {
  // One client per request scope: its transcripts (every request, reply and raw stream) land in
  // <attempt>/llm/, beside what the attempt's role wrote.
  return [](const llm::Endpoint& endpoint,
            const std::filesystem::path& transcript_dir) -> Result<std::unique_ptr<llm::ChatClient>> {
    llm::HttpChatClientOptions options;
    if (!transcript_dir.empty()) options.transcript_dir = transcript_dir / "llm";
    return std::unique_ptr<llm::ChatClient>(
        std::make_unique<llm::HttpChatClient>(endpoint, std::move(options)));
  };
}

}  // namespace stitch::app
