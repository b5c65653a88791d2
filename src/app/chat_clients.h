// Where the LLM roles' chat clients come from in the real loop: the OpenAI-compatible HTTP client
// (llm/http_chat_client.h) for each role's endpoint, saving its
// transcripts in the attempt directory. Tests hand the loop a scripted factory instead.
#pragma once

#include "agents/llm_coder.h"

namespace stitch::app {

// The factory the loop uses when its settings name none.
agents::ChatClientFactory default_chat_client_factory();

}  // namespace stitch::app
