// Identical functors share one type (codegen/functor_sharing.h): copies that differ only in their
// name and comments become aliases of the first; different bodies, a body naming another
// functor, and text outside the structs are kept.
#include <gtest/gtest.h>

#include "codegen/functor_sharing.h"

namespace stitch::codegen {
namespace {

const char* kFunctors =
    "struct s00_copy {\n"
    "  __device__ void operator()(const float (&x)[1], float (&y)[1]) const {\n"
    "    y[0] = x[0];\n"
    "  }\n"
    "};\n"
    "\n"
    "struct s01_epilogue {\n"
    "  __device__ void operator()(const float (&x)[1], float (&y)[1]) const {\n"
    "    const float v0 = tanhf(x[0]);  // tanh\n"
    "    y[0] = v0;\n"
    "  }\n"
    "};\n"
    "\n"
    "struct s02_copy {\n"
    "  __device__ void operator()(const float (&x)[1], float (&y)[1]) const {\n"
    "    y[0] = x[0];\n"
    "  }\n"
    "};\n"
    "\n"
    "struct s03_epilogue {\n"
    "  __device__ void operator()(const float (&x)[1], float (&y)[1]) const {\n"
    "    const float v0 = tanhf(x[0]);  // tanh_1\n"
    "    y[0] = v0;\n"
    "  }\n"
    "};\n"
    "\n"
    "struct s04_relu {\n"
    "  __device__ void operator()(const float (&x)[1], float (&y)[1]) const {\n"
    "    y[0] = fmaxf(x[0], 0.0f);\n"
    "  }\n"
    "};\n"
    "\n"
    "struct s05_wrap {\n"
    "  s00_copy inner;\n"
    "};\n"
    "struct s06_wrap {\n"
    "  s02_copy inner;\n"
    "};\n"
    "constexpr int kSomething = 1;\n";

TEST(FunctorSharingTest, CopiesBecomeAliasesOfTheFirst) {
  const std::string shared = share_identical_functors(kFunctors);
  EXPECT_NE(shared.find("struct s00_copy {"), std::string::npos);
  EXPECT_NE(shared.find("struct s01_epilogue {"), std::string::npos);
  EXPECT_NE(shared.find("using s02_copy = s00_copy;"), std::string::npos) << shared;
  // Comments (node ids) aside, the epilogues are one body.
  EXPECT_NE(shared.find("using s03_epilogue = s01_epilogue;"), std::string::npos) << shared;
  EXPECT_EQ(shared.find("struct s02_copy {"), std::string::npos);
  EXPECT_EQ(shared.find("tanh_1"), std::string::npos);
}

TEST(FunctorSharingTest, DifferentBodiesAndOtherTextAreKept) {
  const std::string shared = share_identical_functors(kFunctors);
  EXPECT_NE(shared.find("struct s04_relu {"), std::string::npos);
  // They name different functors (aliases of one type, but the text differs): both kept.
  EXPECT_NE(shared.find("struct s05_wrap {"), std::string::npos);
  EXPECT_NE(shared.find("struct s06_wrap {"), std::string::npos);
  EXPECT_NE(shared.find("constexpr int kSomething = 1;"), std::string::npos);
  EXPECT_EQ(share_identical_functors(""), "");
}

}  // namespace
}  // namespace stitch::codegen
