// What `stitchcuda doctor` asks of an endpoint: GET {api_base}/models (which models it serves,
// how fast it answers) and one tiny completion (max_tokens 8, not streamed, no retries), so that
// a wrong URL, a missing key or a model the server does not know shows before a run.
#pragma once

#include <string>
#include <vector>

#include "llm/chat.h"
#include "llm/http_transport.h"
#include "llm/retry.h"

namespace stitch::llm {

struct EndpointProbe {
  std::string api_base;
  std::vector<std::string> models;  // as /models listed them
  double models_s = 0;
  std::string models_error;  // empty: /models answered
  std::string model;         // the one asked for a completion (the first listed when none given)
  std::string reply_start;   // the first words of its reply
  double completion_s = 0;
  std::string completion_error;  // empty: the completion answered

  bool ok() const { return models_error.empty() && completion_error.empty(); }
};

// Probes `endpoint`; `model` empty: the first model /models lists. Errors are data in the probe;
// the API key never appears in them.
EndpointProbe probe_endpoint(const Endpoint& endpoint, const std::string& model,
                             HttpTransport& transport, RetryClock& clock);

}  // namespace stitch::llm
