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

TEST(MaterializeInit, ConstantsAndReproducibleRandom) {
  auto z = materializeInit(InitRule::zeros, 0, 0, 5, 1, "w");
  EXPECT_EQ(z, std::vector<float>(5, 0.0f));
  auto c = materializeInit(InitRule::constant, -2.0, 0, 3, 1, "w");
  EXPECT_EQ(c, std::vector<float>(3, -2.0f));
  auto n1 = materializeInit(InitRule::normal, 0.0, 0.02, 20000, 7, "a.W");
  auto n2 = materializeInit(InitRule::normal, 0.0, 0.02, 20000, 7, "a.W");
  auto n3 = materializeInit(InitRule::normal, 0.0, 0.02, 20000, 7, "b.W");
  EXPECT_EQ(n1, n2);          // same seed and name: same values
  EXPECT_NE(n1, n3);          // another parameter: another stream
  double mean = 0, var = 0;
  for (float v : n1)
    mean += v;
  mean /= n1.size();
  for (float v : n1)
    var += (v - mean) * (v - mean);
  var /= n1.size();
  EXPECT_NEAR(mean, 0.0, 0.02 * 4 / std::sqrt(20000.0));
  EXPECT_NEAR(std::sqrt(var), 0.02, 0.02 * 0.03);
  auto u = materializeInit(InitRule::uniform, -0.1, 0.1, 10000, 3, "u");
  for (float v : u) {
    EXPECT_GE(v, -0.1f);
    EXPECT_LT(v, 0.1f);
  }
}
