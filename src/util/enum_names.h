// A scoped enum's names in one table (STYLE.md item 1: a name table and a count check) instead of
// a switch per enum: the enumerators run 0..N-1 in declaration order, the table lists their names
// in that order, and a static_assert beside the table checks its length against the last
// enumerator.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace stitch {

// The name of `value`; `fallback` for a value outside the table (a bad cast).
template <typename Enum, size_t N>
constexpr std::string_view enum_name(const std::array<std::string_view, N>& names, Enum value,
                                     std::string_view fallback = "unknown") {
  const auto index = static_cast<size_t>(value);
  return index < N ? names[index] : fallback;
}

// The enumerator named `name`; nullopt for a name not in the table.
template <typename Enum, size_t N>
constexpr std::optional<Enum> enum_from_name(const std::array<std::string_view, N>& names,
                                             std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace stitch
