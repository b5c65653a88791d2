// The real loop's chat clients (chat_clients.h).
#include "app/chat_clients.h"

namespace stitch::app {

agents::ChatClientFactory default_chat_client_factory() {
  // The HTTP client is written on the llm-client branch; merging it replaces this body with its
  // construction (endpoint + transcript directory). Until then an LLM role fails its first step
  // with this machine error instead of pretending to reach the endpoint.
  return [](const llm::Endpoint& endpoint,
            const std::filesystem::path&) -> Result<std::unique_ptr<llm::ChatClient>> {
    return make_error(ErrorKind::machine,
                      "this build has no HTTP chat client yet (cannot reach {}): the LLM roles' "
                      "client lands with issue 14's client half",
                      endpoint.api_base);
  };
}

}  // namespace stitch::app
