#include "validate/tls_reader.h"

#include <gtest/gtest.h>

#include "validate/test_bytes.h"

namespace xb::validate {
namespace {

using testing::Unhex;

Result<size_t> LengthOf(std::string_view hex) {
  const std::string bytes = Unhex(hex);
  TlsReader r(bytes);
  return r.ReadVectorLength();
}

TEST(TlsReader, ReadsBigEndianIntegers) {
  const std::string bytes = Unhex("01 0203 04050607 08090a0b0c0d0e0f");
  TlsReader r(bytes);
  EXPECT_EQ(*r.ReadUint8(), 0x01);
  EXPECT_EQ(*r.ReadUint16(), 0x0203);
  EXPECT_EQ(*r.ReadUint32(), 0x04050607u);
  EXPECT_EQ(*r.ReadUint64(), 0x08090a0b0c0d0e0fu);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.position(), 15u);
}

TEST(TlsReader, TruncatedIntegerFailsAndConsumesNothing) {
  const std::string bytes = Unhex("010203");
  TlsReader r(bytes);
  Result<uint32_t> v = r.ReadUint32();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.position(), 0u);
  EXPECT_FALSE(r.ReadUint64().ok());
  EXPECT_EQ(*r.ReadUint16(), 0x0102);
  EXPECT_FALSE(r.ReadUint16().ok());
  EXPECT_EQ(*r.ReadUint8(), 0x03);
  EXPECT_FALSE(r.ReadUint8().ok());
}

// RFC 9420 §2.1.2 table: each prefix size at its smallest and largest length.
TEST(TlsReader, VectorLengthPrefixForms) {
  EXPECT_EQ(*LengthOf("00"), 0u);
  EXPECT_EQ(*LengthOf("3f"), 63u);
  EXPECT_EQ(*LengthOf("4040"), 64u);
  EXPECT_EQ(*LengthOf("7fff"), 16383u);
  EXPECT_EQ(*LengthOf("80004000"), 16384u);
  EXPECT_EQ(*LengthOf("bfffffff"), size_t{kMaxVectorLength});
}

TEST(TlsReader, NonMinimalPrefixIsMalformed) {
  for (std::string_view hex : {"4000", "403f", "80000000", "8000003f", "80003fff"}) {
    Result<size_t> n = LengthOf(hex);
    ASSERT_FALSE(n.ok()) << hex;
    EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(n.status().message(), "vector length prefix is not minimal");
  }
}

TEST(TlsReader, PrefixWithTopBits11IsInvalid) {
  for (std::string_view hex : {"c0", "c000", "ff", "ffffffffffffffff"}) {
    Result<size_t> n = LengthOf(hex);
    ASSERT_FALSE(n.ok()) << hex;
    EXPECT_EQ(n.status().message(), "vector length prefix is invalid");
  }
}

TEST(TlsReader, PrefixCutShortFails) {
  EXPECT_FALSE(LengthOf("").ok());
  EXPECT_FALSE(LengthOf("40").ok());
  EXPECT_FALSE(LengthOf("8000").ok());
  EXPECT_FALSE(LengthOf("800040").ok());
}

TEST(TlsReader, OpaqueVectorReturnsBodyAndRange) {
  const std::string bytes = Unhex("aa 03010203 00 ff");
  TlsReader r(bytes);
  ASSERT_TRUE(r.ReadUint8().ok());
  Result<std::string_view> body = r.ReadOpaque();
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(*body, Unhex("010203"));
  EXPECT_EQ(r.RangeOf(*body), (ByteRange{2, 3}));
  Result<std::string_view> empty = r.ReadOpaque();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(r.RangeSince(1), (ByteRange{1, 5}));
  EXPECT_EQ(r.remaining(), 1u);
}

TEST(TlsReader, OpaqueBodyPastTheEndFails) {
  const std::string bytes = Unhex("040102");
  TlsReader r(bytes);
  Result<std::string_view> body = r.ReadOpaque();
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().message(), "vector runs past the end of the input");
}

TEST(TlsReader, LargeOpaqueVectorsUseTwoAndFourBytePrefixes) {
  for (size_t n : {size_t{64}, size_t{16383}, size_t{16384}, size_t{70000}}) {
    const std::string bytes = testing::Vec(std::string(n, 'x')) + "tail";
    TlsReader r(bytes);
    Result<std::string_view> body = r.ReadOpaque();
    ASSERT_TRUE(body.ok()) << n;
    EXPECT_EQ(body->size(), n);
    EXPECT_EQ(r.remaining(), 4u);
  }
}

Status ReadU16(TlsReader& r) { return r.ReadUint16().status(); }

TEST(TlsReader, ElementVectorReadsWholeElements) {
  const std::string bytes = Unhex("06 0001 0002 0003 ee");
  TlsReader r(bytes);
  int count = 0;
  ASSERT_TRUE(r.ReadElements([&](TlsReader& e) {
                 ++count;
                 return ReadU16(e);
               }).ok());
  EXPECT_EQ(count, 3);
  EXPECT_EQ(r.position(), 7u);
  EXPECT_FALSE(r.non_canonical());
}

// VALIDATION.md 2.1 quirk: an element straddling the declared end is read whole, parsing continues
// after it, and the reader remembers that the input is not a canonical encoding.
TEST(TlsReader, ElementOverrunningDeclaredLengthIsReadWholeAndMarked) {
  const std::string bytes = Unhex("03 0001 0002 ee");
  TlsReader r(bytes);
  int count = 0;
  ASSERT_TRUE(r.ReadElements([&](TlsReader& e) {
                 ++count;
                 return ReadU16(e);
               }).ok());
  EXPECT_EQ(count, 2);
  EXPECT_EQ(r.position(), 5u);
  EXPECT_TRUE(r.non_canonical());
  EXPECT_EQ(*r.ReadUint8(), 0xee);
}

TEST(TlsReader, ElementVectorFailures) {
  {
    // Declared body longer than the input.
    const std::string bytes = Unhex("08 0001");
    TlsReader r(bytes);
    EXPECT_FALSE(r.ReadElements(ReadU16).ok());
  }
  {
    // The last element runs past the end of the input.
    const std::string bytes = Unhex("01 00");
    TlsReader r(bytes);
    EXPECT_FALSE(r.ReadElements(ReadU16).ok());
  }
  {
    // An element reader that consumes nothing cannot loop forever.
    const std::string bytes = Unhex("01 00");
    TlsReader r(bytes);
    Status s = r.ReadElements([](TlsReader&) { return Status::Ok(); });
    EXPECT_EQ(s.message(), "vector element is empty");
  }
  {
    // The element's own failure is returned.
    const std::string bytes = Unhex("02 0001");
    TlsReader r(bytes);
    Status s = r.ReadElements([](TlsReader&) { return InvalidArgument("element is bad"); });
    EXPECT_EQ(s.message(), "element is bad");
  }
  {
    // A non-minimal prefix fails here too.
    const std::string bytes = Unhex("4002 0001");
    TlsReader r(bytes);
    EXPECT_FALSE(r.ReadElements(ReadU16).ok());
  }
}

TEST(TlsReader, EmptyElementVector) {
  const std::string bytes = Unhex("00");
  TlsReader r(bytes);
  EXPECT_TRUE(r.ReadElements(ReadU16).ok());
  EXPECT_TRUE(r.empty());
}

}  // namespace
}  // namespace xb::validate
