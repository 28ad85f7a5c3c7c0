//===- JsonTest.cpp - The strict JSON reader -----------------------------===//
#include "rewire/Support/Json.h"

#include <gtest/gtest.h>

using namespace rewire;

TEST(Json, ParsesEveryKind) {
  JsonValue v;
  ASSERT_FALSE(parseJson(R"( {"a": [1, -2.5e3, true, false, null], "s": "x\"\u00e9\n"} )", v));
  ASSERT_TRUE(v.isObject());
  const JsonValue *a = v.get("a");
  ASSERT_TRUE(a && a->isArray());
  ASSERT_EQ(a->array.size(), 5u);
  EXPECT_EQ(a->array[0].asInt(), 1);
  EXPECT_DOUBLE_EQ(a->array[1].number, -2500.0);
  EXPECT_FALSE(a->array[1].asInt());
  EXPECT_TRUE(a->array[2].boolean);
  EXPECT_EQ(a->array[4].kind, JsonValue::Kind::Null);
  EXPECT_EQ(v.get("s")->text, "x\"\xc3\xa9\n");
  EXPECT_EQ(v.get("missing"), nullptr);
}

TEST(Json, KeepsLargeIntegersExact) {
  JsonValue v;
  ASSERT_FALSE(parseJson("[123456789012345678]", v));
  EXPECT_EQ(v.array[0].asInt(), 123456789012345678LL);
}

TEST(Json, RejectsMalformedInputWithAnOffset) {
  const char *bad[] = {"",        "{",          "[1,]",      "{\"a\" 1}", "{\"a\":1,\"a\":2}",
                       "\"\x01\"", "01x",        "[1] 2",     "tru",       "\"\\q\"",
                       "{1:2}",   "[\"\\u12\"]", "-",          "1.",        "[1e]"};
  for (const char *text : bad) {
    JsonValue v;
    auto err = parseJson(text, v);
    ASSERT_TRUE(err) << text;
    EXPECT_NE(err->find("at byte"), std::string::npos) << *err;
  }
}

TEST(Json, LimitsNesting) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  JsonValue v;
  auto err = parseJson(deep, v, 64);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("nesting deeper than 64"), std::string::npos);
  EXPECT_FALSE(parseJson(deep, v, 200));
}

TEST(Json, QuotesRoundTrip) {
  std::string s = "a\"b\\c\n\x01";
  JsonValue v;
  ASSERT_FALSE(parseJson(jsonQuote(s), v));
  EXPECT_EQ(v.text, s);
}
