// Test support: a fresh store in a temporary directory per test, removed afterwards. Included
// by the store's tests only. One thread.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "store/store.h"

namespace gpuq::store::testing {

class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuq-store-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "gpuq.db").string();
    auto opened = Store::open(path_, false);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

}  // namespace gpuq::store::testing
