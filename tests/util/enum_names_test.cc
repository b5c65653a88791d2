// enum_name / enum_from_name on a small table.
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
}  // namespace stitch
