// Loads tests/adversarial/manifest.json for the static-check and library-audit tests: one entry per
// (program, track), with the fatal findings and notes each detector must report.
#pragma once

#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "verify/checks/static_checks.h"
#include "verify/verdict.h"

namespace stitch::test {

inline const std::filesystem::path kAdversarialDir =
    std::filesystem::path(STITCH_TEST_DATA_DIR) / "adversarial";

struct Expectation {
  std::set<std::string> fatal;
  std::set<std::string> notes;
};

struct AdversarialProgram {
  std::string file;
  std::string track_name;
  bool honest = false;
  bool compiles = true;
  bool link_torch = false;
  std::vector<std::string> libraries;
  Expectation static_expect;
  Expectation library_expect;
  std::string why;
};

inline std::vector<AdversarialProgram> load_adversarial_manifest() {
  std::vector<AdversarialProgram> out;
  auto text = read_file(kAdversarialDir / "manifest.json");
  if (!text.ok()) return out;
  const nlohmann::json manifest = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || !manifest.contains("programs")) return out;
  auto kinds = [](const nlohmann::json& j, const char* key) {
    std::set<std::string> s;
    if (j.is_object() && j.contains(key))
      for (const auto& k : j.at(key))
        s.insert(k.get<std::string>());
    return s;
  };
  for (const auto& p : manifest.at("programs")) {
    AdversarialProgram program;
    program.file = p.at("file").get<std::string>();
    program.track_name = p.value("track", "fp32");
    program.honest = p.value("honest", false);
    program.compiles = p.value("compiles", true);
    program.link_torch = p.value("link_torch", false);
    program.libraries = p.value("libraries", std::vector<std::string>{});
    program.why = p.value("why", "");
    program.static_expect =
        Expectation{kinds(p.at("static"), "fatal"), kinds(p.at("static"), "notes")};
    if (!p.at("library").is_null())
      program.library_expect =
          Expectation{kinds(p.at("library"), "fatal"), kinds(p.at("library"), "notes")};
    out.push_back(std::move(program));
  }
  return out;
}

inline std::vector<std::string> manifest_common_sources() {
  std::vector<std::string> out;
  auto text = read_file(kAdversarialDir / "manifest.json");
  if (!text.ok()) return out;
  const nlohmann::json manifest = nlohmann::json::parse(*text, nullptr, false);
  if (manifest.is_object() && manifest.contains("common_sources"))
    for (const auto& s : manifest.at("common_sources"))
      out.push_back(s.get<std::string>());
  return out;
}

// How gtest prints a parameter (test names and failure messages).
inline void PrintTo(const AdversarialProgram& p, std::ostream* os) {
  *os << p.file << " [" << p.track_name << "]";
}

// "a12_half_conversion_bf16": a valid gtest parameter name.
inline std::string program_case_name(const AdversarialProgram& p) {
  std::string name = std::filesystem::path(p.file).stem().string() + "_" + p.track_name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

inline std::string kind_name(HackKind kind) {
  return std::string(enum_name(kind));
}

// Kinds of the findings, split by fatality, and the details for failure messages.
inline Expectation kinds_of(const std::vector<HackFinding>& findings) {
  Expectation e;
  for (const HackFinding& f : findings)
    (f.fatal ? e.fatal : e.notes).insert(kind_name(f.kind));
  return e;
}

inline std::string describe(const std::vector<HackFinding>& findings) {
  std::string s;
  for (const HackFinding& f : findings)
    s +=
        std::string(f.fatal ? "  FATAL " : "  note  ") + kind_name(f.kind) + ": " + f.detail + "\n";
  return s.empty() ? "  (none)\n" : s;
}

}  // namespace stitch::test
