// Checks a JSON value against the subset of JSON Schema (draft 2020-12) that the tools declare:
// type (one name or a list), properties, required, additionalProperties (false or a schema), enum,
// minimum / maximum, minLength / maxLength, items, minItems / maxItems. A keyword outside the
// subset is a problem of the schema, reported as such, so a tool cannot declare a rule that is
// silently not enforced.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stitch::mcp {

// One line per violation, each naming where ("arguments.seed: ..."); empty when the value fits.
std::vector<std::string> check_against_schema(const nlohmann::json& value,
                                              const nlohmann::json& schema,
                                              const std::string& where = "arguments");

// The keywords check_against_schema enforces; a schema using any other fails its own check.
std::vector<std::string> unsupported_schema_keywords(const nlohmann::json& schema);

}  // namespace stitch::mcp
