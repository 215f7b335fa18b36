// MESHPLAN_RETURN_IF_ERROR and MESHPLAN_ASSIGN_OR_RETURN (core/base/status.h): an error leaves the
// function with that Status, a value is moved into the left-hand side, the expression runs once.
#include "core/base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace meshplan {
namespace {

Result<std::string> Named(bool ok, int* calls) {
  ++*calls;
  if (!ok) return Status::Invalid("bad name");
  return std::string("mesh");
}

Result<size_t> LengthOf(bool ok, int* calls) {
  MESHPLAN_ASSIGN_OR_RETURN(auto name, Named(ok, calls));
  return name.size();
}

Status Twice(bool first_ok, bool second_ok, std::string* out, int* calls) {
  MESHPLAN_ASSIGN_OR_RETURN(*out, Named(first_ok, calls));                // an existing variable
  MESHPLAN_ASSIGN_OR_RETURN(const auto second, Named(second_ok, calls));  // two on one scope
  *out += second;
  return Status::Ok();
}

Result<std::unique_ptr<int>> Boxed(int v) { return std::make_unique<int>(v); }

Result<int> Unboxed(int v) {
  MESHPLAN_ASSIGN_OR_RETURN(auto box, Boxed(v));  // move-only values are moved, not copied
  return *box;
}

Status Checked(bool ok) {
  MESHPLAN_RETURN_IF_ERROR(ok ? Status::Ok() : Status::Invalid("no"));
  return Status::Invalid("reached the end");
}

TEST(Status, AssignOrReturnAssignsOrPropagates) {
  int calls = 0;
  auto length = LengthOf(true, &calls);
  ASSERT_TRUE(length.ok());
  EXPECT_EQ(*length, 4u);  // "mesh"
  EXPECT_EQ(calls, 1);
  auto failed = LengthOf(false, &calls);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "bad name");
  EXPECT_EQ(calls, 2);

  std::string out;
  calls = 0;
  EXPECT_TRUE(Twice(true, true, &out, &calls).ok());
  EXPECT_EQ(out, "meshmesh");
  EXPECT_EQ(calls, 2);
  out.clear();
  calls = 0;
  EXPECT_EQ(Twice(false, true, &out, &calls).message(), "bad name");
  EXPECT_EQ(calls, 1) << "the second expression must not run after the first failed";
  EXPECT_EQ(out, "");

  auto unboxed = Unboxed(7);
  ASSERT_TRUE(unboxed.ok());
  EXPECT_EQ(*unboxed, 7);
}

TEST(Status, ReturnIfErrorReturnsOnlyErrors) {
  EXPECT_EQ(Checked(false).message(), "no");
  EXPECT_EQ(Checked(true).message(), "reached the end");
}

}  // namespace
}  // namespace meshplan
