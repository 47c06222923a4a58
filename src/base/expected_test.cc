#include "base/expected.h"

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "base/status.h"

namespace xb {
namespace {

struct ParseError {
  int position = 0;
};

Expected<int, ParseError> ParseDigit(char c) {
  if (c < '0' || c > '9') {
    return ParseError{.position = 1};
  }
  return c - '0';
}

Expected<int, ParseError> SumOfTwo(char a, char b) {
  XB_TRY(int first, ParseDigit(a));
  XB_TRY(int second, ParseDigit(b));
  return first + second;
}

Expected<void, ParseError> CheckDigit(char c) {
  XB_TRY_VOID(ParseDigit(c));
  return {};
}

TEST(Expected, ValueAndErrorAreReadWithoutGet) {
  Expected<int, ParseError> good = ParseDigit('7');
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value(), 7);
  EXPECT_EQ(*good, 7);
  Expected<int, ParseError> bad = ParseDigit('x');
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().position, 1);
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(Expected, TryReturnsTheFirstError) {
  EXPECT_EQ(SumOfTwo('2', '3').value(), 5);
  EXPECT_FALSE(SumOfTwo('2', 'z').ok());
  EXPECT_TRUE(CheckDigit('4').ok());
  EXPECT_EQ(CheckDigit('q').error().position, 1);
}

TEST(Expected, MoveOnlyValuesMoveOut) {
  Expected<std::unique_ptr<int>, ParseError> made = std::make_unique<int>(9);
  std::unique_ptr<int> taken = std::move(made).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 9);
}

TEST(Expected, ResultIsExpectedOfStatus) {
  Result<std::string> named = std::string("ok");
  EXPECT_TRUE(named.ok());
  EXPECT_TRUE(named.status().ok());
  Result<std::string> failed = InvalidArgument("no name");
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(failed.error().message(), "no name");
}

TEST(ExpectedDeathTest, ValueOfAFailureAborts) {
  Expected<int, ParseError> bad = ParseError{};
  EXPECT_DEATH((void)bad.value(), "");
}

boost::asio::awaitable<Expected<int, ParseError>> SumOfTwoCo(char a, char b) {
  XB_TRY_CO(int first, ParseDigit(a));
  XB_TRY_VOID_CO(CheckDigit(b));
  co_return first + (b - '0');
}

TEST(Expected, CoroutineFormsReturnTheError) {
  boost::asio::io_context io;
  std::optional<Expected<int, ParseError>> good;
  std::optional<Expected<int, ParseError>> bad;
  boost::asio::co_spawn(
      io, [&]() -> boost::asio::awaitable<void> { good.emplace(co_await SumOfTwoCo('1', '2')); },
      boost::asio::detached);
  boost::asio::co_spawn(
      io, [&]() -> boost::asio::awaitable<void> { bad.emplace(co_await SumOfTwoCo('1', '!')); },
      boost::asio::detached);
  io.run();
  ASSERT_TRUE(good.has_value() && good->ok());
  EXPECT_EQ(good->value(), 3);
  ASSERT_TRUE(bad.has_value());
  EXPECT_FALSE(bad->ok());
}

}  // namespace
}  // namespace xb
