//===- InitRulesTest.cpp - Tests of the paper initialization rules -------===//
//
// LayerScale's depth rule (CaiT), NAG's alpha_l = l^{-1/2}, and logit.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/InitRules.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace rewire;

TEST(LayerScaleInit, DepthThresholds) {
  EXPECT_DOUBLE_EQ(*layerScaleInit(1), 0.1);
  EXPECT_DOUBLE_EQ(*layerScaleInit(18), 0.1);
  EXPECT_DOUBLE_EQ(*layerScaleInit(19), 1e-5);
  EXPECT_DOUBLE_EQ(*layerScaleInit(24), 1e-5);
  EXPECT_DOUBLE_EQ(*layerScaleInit(25), 1e-6);
  EXPECT_DOUBLE_EQ(*layerScaleInit(96), 1e-6);
  EXPECT_FALSE(layerScaleInit(0).has_value());
}

TEST(NagAlphaInit, InverseSquareRoot) {
  EXPECT_DOUBLE_EQ(*nagAlphaInit(1), 1.0);
  EXPECT_DOUBLE_EQ(*nagAlphaInit(4), 0.5);
  EXPECT_NEAR(*nagAlphaInit(12), 0.28867513459481287, 1e-15);
  EXPECT_FALSE(nagAlphaInit(0).has_value());
  EXPECT_FALSE(nagAlphaInit(-3).has_value());
}

TEST(Logit, InvertsSigmoid) {
  for (double p : {0.01, 0.25, 0.5, 0.9, 0.999}) {
    double x = *logit(p);
    EXPECT_NEAR(1.0 / (1.0 + std::exp(-x)), p, 1e-12) << "p = " << p;
  }
  EXPECT_DOUBLE_EQ(*logit(0.5), 0.0);
  EXPECT_FALSE(logit(0.0).has_value());
  EXPECT_FALSE(logit(1.0).has_value());
  EXPECT_FALSE(logit(std::nan("")).has_value());
}
