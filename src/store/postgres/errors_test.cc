#include "store/postgres/errors.h"

#include <gtest/gtest.h>

namespace xb::store::postgres {
namespace {

// verifies: issue 28 (store failures are logged by their cause): the cause class of a SQLSTATE.
TEST(PostgresErrorsTest, ClassifiesTheCauseOfASqlState) {
  EXPECT_EQ(CauseForSqlState("53100"), ErrorCause::kDiskFull);
  EXPECT_EQ(CauseForSqlState("53200"), ErrorCause::kOutOfMemory);
  EXPECT_EQ(CauseForSqlState("53300"), ErrorCause::kResources);
  EXPECT_EQ(CauseForSqlState("58030"), ErrorCause::kIoError);
  EXPECT_EQ(CauseForSqlState("XX001"), ErrorCause::kCorrupt);
  EXPECT_EQ(CauseForSqlState("25006"), ErrorCause::kReadOnly);
  EXPECT_EQ(CauseForSqlState("3D000"), ErrorCause::kCannotOpen);
  EXPECT_EQ(CauseForSqlState("08006"), ErrorCause::kConnection);
  EXPECT_EQ(CauseForSqlState("57P01"), ErrorCause::kConnection);
  EXPECT_EQ(CauseForSqlState("57014"), ErrorCause::kTimeout);
  EXPECT_EQ(CauseForSqlState("23505"), ErrorCause::kInvariant);
  EXPECT_EQ(CauseForSqlState("42P01"), ErrorCause::kUnclassified);
  EXPECT_EQ(CauseForSqlState(""), ErrorCause::kUnclassified);
}

TEST(PostgresErrorsTest, AStoreErrorCarriesItsCause) {
  const StoreError full = ServerError("commit publish", "53100", "").ToStoreError();
  EXPECT_EQ(full.kind, ErrorKind::kOther);  // STORE.md 3.2: UNAVAILABLE, kind "other"
  EXPECT_EQ(full.cause, ErrorCause::kDiskFull);
  EXPECT_EQ(full.message, "commit publish: disk full (SQLSTATE 53100)");
  // Without a SQLSTATE the kind stands for the cause.
  EXPECT_EQ(CauseOf(ConnectionLost("query").ToStoreError()), ErrorCause::kConnection);
  EXPECT_EQ(CauseOf(PoolTimeout("query").ToStoreError()), ErrorCause::kPoolTimeout);
}

}  // namespace
}  // namespace xb::store::postgres
