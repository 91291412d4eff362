// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

using HookCursorTest = testing::StoreFixture;

TEST_F(HookCursorTest, NoHooksNoRows) {
  auto cursors = store_->hook_cursors();
  ASSERT_TRUE(cursors) << cursors.error().message;
  EXPECT_TRUE(cursors->empty());
}

TEST_F(HookCursorTest, CommitCreatesAndAdvancesButNeverMovesBack) {
  ASSERT_TRUE(store_->commit_hook_cursor("slack", 5, 2, 1000));
  ASSERT_TRUE(store_->commit_hook_cursor("slack", 9, 4, 2000));
  ASSERT_TRUE(store_->commit_hook_cursor("slack", 7, 3, 3000));  // a late, older commit
  auto cursors = store_->hook_cursors();
  ASSERT_TRUE(cursors);
  ASSERT_EQ(cursors->size(), 1u);
  EXPECT_EQ((*cursors)[0].name, "slack");
  EXPECT_EQ((*cursors)[0].seq, 9);
  EXPECT_EQ((*cursors)[0].delivered, 4);
  EXPECT_EQ((*cursors)[0].updated_at_ms, 3000);
  EXPECT_EQ((*cursors)[0].last_error, "");
}

TEST_F(HookCursorTest, ErrorsAreKeptAfterLaterSuccessAndAcrossReopen) {
  ASSERT_TRUE(store_->record_hook_error("mail", "HTTP 500: boom", 1500));  // before any success
  ASSERT_TRUE(store_->commit_hook_cursor("mail", 3, 1, 2000));
  ASSERT_TRUE(store_->commit_hook_cursor("other", 1, 1, 2000));
  store_.reset();
  auto reopened = Store::open(path_, true);
  ASSERT_TRUE(reopened) << reopened.error().message;
  auto cursors = (*reopened)->hook_cursors();
  ASSERT_TRUE(cursors);
  ASSERT_EQ(cursors->size(), 2u);
  const Store::HookCursor& mail = (*cursors)[0];
  EXPECT_EQ(mail.name, "mail");
  EXPECT_EQ(mail.seq, 3);
  EXPECT_EQ(mail.last_error, "HTTP 500: boom");
  EXPECT_EQ(mail.last_error_at_ms, 1500);
  EXPECT_EQ((*cursors)[1].name, "other");
}

}  // namespace
}  // namespace gpuq::store
