#include "store/batched_post.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <string>

namespace xb::store {
namespace {

TEST(BatchedPostTest, WithoutAScopeEachPostIsItsOwnHandler) {
  boost::asio::io_context io;
  std::string order;
  BatchedPost(io.get_executor(), [&] { order += 'a'; });
  BatchedPost(io.get_executor(), [&] { order += 'b'; });
  EXPECT_EQ(io.poll(), 2u);
  EXPECT_EQ(order, "ab");
}

TEST(BatchedPostTest, AScopeHoldsItsPostsBackAndHandsThemOverAsOneHandlerPerExecutor) {
  boost::asio::io_context first;
  boost::asio::io_context second;
  std::string order;
  {
    CompletionScope scope;
    BatchedPost(first.get_executor(), [&] { order += '1'; });
    BatchedPost(second.get_executor(), [&] { order += 'x'; });
    BatchedPost(first.get_executor(), [&] { order += '2'; });
    BatchedPost(first.get_executor(), [&] { order += '3'; });
    EXPECT_EQ(first.poll(), 0u);  // nothing is posted while the scope lasts
    EXPECT_EQ(second.poll(), 0u);
    first.restart();
    second.restart();
  }
  EXPECT_EQ(first.poll(), 1u);  // one handler ran all three, in posting order
  EXPECT_EQ(order, "123");
  EXPECT_EQ(second.poll(), 1u);
  EXPECT_EQ(order, "123x");
}

TEST(BatchedPostTest, NestedScopesEachHandOverTheirOwnPosts) {
  boost::asio::io_context io;
  std::string order;
  {
    CompletionScope outer;
    BatchedPost(io.get_executor(), [&] { order += 'o'; });
    {
      CompletionScope inner;
      BatchedPost(io.get_executor(), [&] { order += 'i'; });
    }
    EXPECT_EQ(io.poll(), 1u);  // the inner scope's post, at its end
    EXPECT_EQ(order, "i");
    io.restart();
    BatchedPost(io.get_executor(), [&] { order += 'p'; });
    EXPECT_EQ(io.poll(), 0u);
    io.restart();
  }
  EXPECT_GE(io.poll(), 1u);  // the outer scope's posts, in order
  EXPECT_EQ(order, "iop");
  EXPECT_EQ(CompletionScope::current(), nullptr);
}

}  // namespace
}  // namespace xb::store
