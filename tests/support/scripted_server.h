// The scripted OpenAI-compatible server (support/scripted_openai_server.py) as a test fixture:
// writes the script, starts the server as a child on a free loopback port, and reads back the
// requests it logged. The child (and its process group) is killed when the fixture goes.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "util/line_child.h"

namespace stitch::testing {

class ScriptedServer {
 public:
  // `dir` holds the script and the request log.
  ScriptedServer(const std::filesystem::path& dir, const nlohmann::json& script)
      : log_path_(dir / "requests.jsonl") {
    std::filesystem::create_directories(dir);
    std::filesystem::remove(log_path_);
    const auto script_path = dir / "script.json";
    std::ofstream(script_path) << script.dump(2);
    ChildSpec spec;
    spec.argv = {
        "python3",  std::string(STITCH_TEST_DATA_DIR) + "/support/scripted_openai_server.py",
        "--script", script_path.string(),
        "--log",    log_path_.string()};
    spec.stderr_path = dir / "server.stderr";
    auto child = LineChild::spawn(spec);
    if (!child.ok()) {
      ADD_FAILURE() << "starting the scripted server: " << child.error().message;
      return;
    }
    child_ = std::move(*child);
    LineChild::ReadResult line = child_->read_line(20);
    if (line.status != LineChild::ReadStatus::line || !line.line.starts_with("port ")) {
      ADD_FAILURE() << "the scripted server did not say its port: " << line.line;
      return;
    }
    port_ = std::stoi(line.line.substr(5));
  }
  ~ScriptedServer() {
    if (child_) child_->stop(0, 0.5);
  }

  int port() const { return port_; }
  std::string api_base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

  // Every request logged so far, in arrival order.
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_path_);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  // The chat requests only.
  std::vector<nlohmann::json> chat_requests() const {
    std::vector<nlohmann::json> out;
    for (auto& request : requests())
      if (request["method"] == "POST") out.push_back(request);
    return out;
  }

 private:
  std::filesystem::path log_path_;
  std::unique_ptr<LineChild> child_;
  int port_ = 0;
};

}  // namespace stitch::testing
