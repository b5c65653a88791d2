// enum_name / enum_from_name on a small table, directly and through an enum's enum_names hook.
#include "util/enum_names.h"

#include <gtest/gtest.h>

namespace stitch {
namespace {

enum class Color : uint8_t { red, green, blue };
constexpr std::array<std::string_view, 3> kColorNames = {"red", "green", "blue"};
static_assert(kColorNames.size() == static_cast<size_t>(Color::blue) + 1);

TEST(EnumNames, NamesAndParsesEveryEnumerator) {
  for (Color color : {Color::red, Color::green, Color::blue})
    EXPECT_EQ(enum_from_name<Color>(kColorNames, enum_name(kColorNames, color)), color);
  EXPECT_EQ(enum_name(kColorNames, Color::green), "green");
  static_assert(enum_name(kColorNames, Color::blue) == "blue");
}

TEST(EnumNames, OutsideTheTable) {
  EXPECT_EQ(enum_name(kColorNames, static_cast<Color>(7)), "unknown");
  EXPECT_EQ(enum_name(kColorNames, static_cast<Color>(7), "red"), "red");
  EXPECT_FALSE(enum_from_name<Color>(kColorNames, "purple"));
}

}  // namespace

// An enum in another namespace, its table tied to it beside it (found by argument-dependent
// lookup from stitch's templates).
namespace shapes {
enum class Shape : uint8_t { circle, square };
inline constexpr std::array<std::string_view, 2> kShapeNames = {"circle", "square"};
constexpr const auto& enum_names(Shape) {
  return kShapeNames;
}
static_assert(names_every_enumerator(Shape::square));
// A table one name short fails the count check.
enum class Short : uint8_t { a, b };
inline constexpr std::array<std::string_view, 1> kShortNames = {"a"};
constexpr const auto& enum_names(Short) {
  return kShortNames;
}
static_assert(!names_every_enumerator(Short::b));
}  // namespace shapes

namespace {

static_assert(NamedEnum<shapes::Shape>);
static_assert(!NamedEnum<Color>);  // no enum_names hook: only the table forms apply

TEST(EnumNames, AnEnumWithItsTableNeedsNoWrapper) {
  EXPECT_EQ(enum_name(shapes::Shape::square), "square");
  static_assert(enum_name(shapes::Shape::circle) == "circle");
  EXPECT_EQ(enum_from_name<shapes::Shape>("circle"), shapes::Shape::circle);
  EXPECT_FALSE(enum_from_name<shapes::Shape>("triangle").has_value());
  EXPECT_EQ(enum_name(static_cast<shapes::Shape>(9)), "unknown");
  EXPECT_EQ(enum_name(static_cast<shapes::Shape>(9), "?"), "?");
}

}  // namespace
}  // namespace stitch
