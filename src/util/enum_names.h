// A scoped enum's names in one table (STYLE.md item 1: a name table and a count check) instead of
// a switch per enum: the enumerators run 0..N-1 in declaration order, the table lists their names
// in that order, and a static_assert beside the table checks its length against the last
// enumerator.
//
// An enum whose names travel (JSON files, command lines) ties its table to the enum once, beside
// it in its own namespace, so callers need no per-enum wrapper:
//
//   inline constexpr std::array<std::string_view, 3> kTrackNames = {"fp32", "tf32", "bf16"};
//   constexpr const auto& enum_names(Track) { return kTrackNames; }  // found by ADL
//   static_assert(names_every_enumerator(Track::bf16));
//
//   enum_name(Track::tf32)           → "tf32"
//   enum_from_name<Track>("bf16")    → Track::bf16; nullopt for a name not in the table
//
// A table used in one place only (a printer's local names) calls the table forms directly.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

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

// An enum with a name table declared as `enum_names(Enum)` in its namespace.
template <typename Enum>
concept NamedEnum = std::is_enum_v<Enum> && requires(Enum value) {
  { enum_names(value).size() } -> std::convertible_to<size_t>;
};

template <NamedEnum Enum>
constexpr std::string_view enum_name(Enum value, std::string_view fallback = "unknown") {
  return enum_name(enum_names(value), value, fallback);
}

template <NamedEnum Enum>
constexpr std::optional<Enum> enum_from_name(std::string_view name) {
  return enum_from_name<Enum>(enum_names(Enum{}), name);
}

// The count check: the table names every enumerator up to `last`, and no more.
template <NamedEnum Enum>
constexpr bool names_every_enumerator(Enum last) {
  return enum_names(last).size() == static_cast<size_t>(last) + 1;
}

}  // namespace stitch
