//===- ShapeTest.cpp - Tests of the MLIR-free shape helpers ---------------===//
//
// Broadcasting, axis normalization, overflow-checked element counts and the
// convolution window arithmetic of rewire/Support/Shape.h.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Shape.h"

#include <gtest/gtest.h>

using namespace rewire;
using Shape = std::vector<int64_t>;

TEST(Broadcast, AlignsTrailingDimensions) {
  EXPECT_EQ(broadcastShapes({2, 16, 64}, {64}), Shape({2, 16, 64}));
  EXPECT_EQ(broadcastShapes({64}, {2, 16, 64}), Shape({2, 16, 64}));
  EXPECT_EQ(broadcastShapes({2, 1, 64}, {1, 16, 1}), Shape({2, 16, 64}));
  EXPECT_EQ(broadcastShapes({}, {3, 4}), Shape({3, 4}));
}

TEST(Broadcast, RejectsMismatchedStaticDimensions) {
  EXPECT_FALSE(broadcastShapes({2, 3}, {4}).has_value());
  EXPECT_FALSE(broadcastShapes({2, 16, 64}, {2, 8, 64}).has_value());
}

TEST(Broadcast, DynamicDimensions) {
  // A dynamic size against 1 stays dynamic; against N > 1 it must be N.
  EXPECT_EQ(broadcastShapes({kDynamicDim, 64}, {1, 64}),
            Shape({kDynamicDim, 64}));
  EXPECT_EQ(broadcastShapes({kDynamicDim, 64}, {8, 64}), Shape({8, 64}));
  EXPECT_EQ(broadcastShapes({kDynamicDim}, {kDynamicDim}),
            Shape({kDynamicDim}));
}

TEST(NormalizeAxis, NegativeAndOutOfRange) {
  EXPECT_EQ(normalizeAxis(-1, 3), 2);
  EXPECT_EQ(normalizeAxis(0, 3), 0);
  EXPECT_EQ(normalizeAxis(-3, 3), 0);
  EXPECT_FALSE(normalizeAxis(3, 3).has_value());
  EXPECT_FALSE(normalizeAxis(-4, 3).has_value());
  EXPECT_FALSE(normalizeAxis(0, 0).has_value());
}

TEST(NumElements, CountsAndRejectsOverflow) {
  EXPECT_EQ(checkedNumElements({2, 3, 4}), 24);
  EXPECT_EQ(checkedNumElements({}), 1);
  EXPECT_EQ(checkedNumElements({0, int64_t(1) << 62}), 0);
  EXPECT_FALSE(checkedNumElements({int64_t(1) << 32, int64_t(1) << 32})
                   .has_value());
  EXPECT_FALSE(checkedNumElements({kDynamicDim, 4}).has_value());
  EXPECT_FALSE(checkedNumElements({-2, 4}).has_value());
  EXPECT_FALSE(checkedNumElements({1000, 1000}, /*cap=*/999999).has_value());
  EXPECT_EQ(checkedNumElements({1000, 1000}, /*cap=*/1000000), 1000000);
}

TEST(ConvOutputSize, ResNetShapes) {
  // 7x7 stride-2 stem with pad 3: 224 -> 112; 3x3 pad 1: size preserved.
  EXPECT_EQ(convOutputSize(224, 7, 2, 3, 3, 1), 112);
  EXPECT_EQ(convOutputSize(56, 3, 1, 1, 1, 1), 56);
  // 3x3 stride-2 max pool with pad 1: 112 -> 56.
  EXPECT_EQ(convOutputSize(112, 3, 2, 1, 1, 1), 56);
  // Dilation 2 widens a 3-tap window to 5.
  EXPECT_EQ(convOutputSize(10, 3, 1, 0, 0, 2), 6);
}

TEST(ConvOutputSize, InvalidArguments) {
  EXPECT_FALSE(convOutputSize(4, 5, 1, 0, 0, 1).has_value()); // too wide
  EXPECT_FALSE(convOutputSize(8, 0, 1, 0, 0, 1).has_value());
  EXPECT_FALSE(convOutputSize(8, 3, 0, 0, 0, 1).has_value());
  EXPECT_FALSE(convOutputSize(8, 3, 1, -1, 0, 1).has_value());
  EXPECT_FALSE(convOutputSize(8, int64_t(1) << 62, 1, 0, 0, 4).has_value());
  EXPECT_EQ(convOutputSize(kDynamicDim, 3, 1, 1, 1, 1), kDynamicDim);
}
