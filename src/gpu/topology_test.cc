// SPDX-License-Identifier: Apache-2.0
#include "gpu/topology.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpu/testdata.h"

namespace gpuq::gpu {
namespace {

using testing::read_testdata;

void expect_corrupt(const Result<Links>& links, std::string_view where, std::string_view what) {
  ASSERT_FALSE(links.has_value()) << "accepted";
  EXPECT_EQ(links.error().code, Code::kCorruption);
  EXPECT_NE(links.error().message.find(where), std::string::npos) << links.error().message;
  EXPECT_NE(links.error().message.find(what), std::string::npos) << links.error().message;
}

TEST(ParseNvidiaSmiTopoTest, EightH100AllNvLink) {
  auto links = parse_nvidia_smi_topo(read_testdata("topo_h100x8.txt"));
  ASSERT_TRUE(links.has_value()) << links.error().message;
  ASSERT_EQ(links->size(), 8u);
  for (int a = 0; a < 8; ++a) {
    ASSERT_EQ((*links)[a].size(), 8u);
    for (int b = 0; b < 8; ++b) EXPECT_EQ((*links)[a][b], a == b ? 0 : 118) << a << "," << b;
  }
}

TEST(ParseNvidiaSmiTopoTest, NvLinkPairsWithPcieBetween) {
  auto links = parse_nvidia_smi_topo(read_testdata("topo_nvlink_pairs4.txt"));
  ASSERT_TRUE(links.has_value()) << links.error().message;
  EXPECT_EQ(*links, (Links{{0, 104, 20, 0}, {104, 0, 20, 0}, {20, 20, 0, 104}, {0, 0, 104, 0}}));
}

TEST(ParseNvidiaSmiTopoTest, ConsumerBoxWithAnsiHeaderAndNics) {
  auto links = parse_nvidia_smi_topo(read_testdata("topo_rtx4090x2.txt"));
  ASSERT_TRUE(links.has_value()) << links.error().message;
  EXPECT_EQ(*links, (Links{{0, 20}, {20, 0}}));
}

TEST(ParseNvidiaSmiTopoTest, EveryConnectionKind) {
  auto links = parse_nvidia_smi_topo(
      "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tNV1\tPIX\tPXB\tPHB\tNODE\t0-7\t0\n"
      "GPU1\tNV1\t X \tNV12\tSYS\tSOC\tNV2\t0-7\t0\n"
      "GPU2\tPIX\tNV12\t X \tPIX\tPIX\tPIX\t0-7\t0\n"
      "GPU3\tPXB\tSYS\tPIX\t X \tPIX\tPIX\t0-7\t0\n"
      "GPU4\tPHB\tSOC\tPIX\tPIX\t X \tPIX\t0-7\t0\n"
      "GPU5\tNODE\tNV2\tPIX\tPIX\tPIX\t X \t0-7\t0\n");
  ASSERT_TRUE(links.has_value()) << links.error().message;
  EXPECT_EQ((*links)[0], (std::vector<int>{0, 101, 40, 30, 20, 10}));
  EXPECT_EQ((*links)[1], (std::vector<int>{101, 0, 112, 0, 0, 102}));
}

TEST(ParseNvidiaSmiTopoTest, SpacesCrlfOldNicColumnsAndLeadingWarning) {
  // The 2017 layout: a NIC named by its device instead of NICn, no NUMA columns, spaces instead
  // of tabs, and a driver warning before the matrix.
  auto links = parse_nvidia_smi_topo(
      "WARNING: infoROM is corrupted at gpu 0000:02:00.0\r\n"
      "        GPU0    GPU1    mlx4_0  CPU Affinity\r\n"
      "GPU0     X      PIX     PHB     0-9,20-29\r\n"
      "GPU1    PIX      X      PHB     0-9,20-29\r\n"
      "mlx4_0  PHB     PHB      X\r\n"
      "\r\n"
      "Legend:\r\n"
      "  X   = Self\r\n"
      "  GPU7 = nonsense that only a legend may hold\r\n");
  ASSERT_TRUE(links.has_value()) << links.error().message;
  EXPECT_EQ(*links, (Links{{0, 40}, {40, 0}}));
}

TEST(ParseNvidiaSmiTopoTest, OneGpu) {
  auto links = parse_nvidia_smi_topo(
      "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \t0-23\t0\t\tN/A\n");
  ASSERT_TRUE(links.has_value()) << links.error().message;
  EXPECT_EQ(*links, (Links{{0}}));
}

TEST(ParseNvidiaSmiTopoTest, GpuLessTextIsAnErrorNamingItsLine) {
  expect_corrupt(parse_nvidia_smi_topo(read_testdata("topo_no_devices.txt")), "line 1",
                 "No devices were found");
  expect_corrupt(parse_nvidia_smi_topo("\n\nNVIDIA-SMI has failed\n"), "line 3", "no topology");
}

TEST(ParseNvidiaSmiTopoTest, EmptyOutputIsAnError) {
  auto links = parse_nvidia_smi_topo(" \n\n");
  ASSERT_FALSE(links.has_value());
  EXPECT_EQ(links.error().code, Code::kCorruption);
  EXPECT_NE(links.error().message.find("printed nothing"), std::string::npos);
}

constexpr std::string_view kHeader2 = "\tGPU0\tGPU1\tCPU Affinity\n";

TEST(ParseNvidiaSmiTopoTest, BadCellsNameTheirLine) {
  std::string header(kHeader2);
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \tNV4\t0-7\nGPU1\tQPI\t X \t0-7\n"),
                 "line 3", "unknown connection \"QPI\" in the GPU0 column");
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \tNV\t0-7\nGPU1\tNV4\t X \t0-7\n"),
                 "line 2", "unknown connection \"NV\"");
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \tNV0\t0-7\nGPU1\tNV4\t X \t0-7\n"),
                 "line 2", "unknown connection \"NV0\"");
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \t X \t0-7\nGPU1\tSYS\t X \t0-7\n"),
                 "line 2", "\"X\" (self) in the GPU1 column");
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\tSYS\tSYS\t0-7\nGPU1\tSYS\t X \t0-7\n"),
                 "line 2", "\"SYS\" where \"X\" (self) belongs");
}

TEST(ParseNvidiaSmiTopoTest, BadRowsNameTheirLine) {
  std::string header(kHeader2);
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \nGPU1\tSYS\t X \t0-7\n"), "line 2",
                 "2 GPU columns expected, 1 found");
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \tSYS\nGPU0\t X \tSYS\n"), "line 3",
                 "a second row for GPU0");
  expect_corrupt(
      parse_nvidia_smi_topo(header + "GPU0\t X \tSYS\nGPU1\tSYS\t X \nGPU2\tSYS\tSYS\tX\n"),
      "line 4", "a row for GPU2, which the header does not name");
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \tSYS\nsomething else\n"), "line 3",
                 "neither a GPU row nor a row of a header column");
  expect_corrupt(parse_nvidia_smi_topo(header + "GPU0\t X \tSYS\n\nLegend:\nGPU1\tSYS\t X\n"),
                 "line 1", "the header names GPU1 but no row for it follows");
  expect_corrupt(parse_nvidia_smi_topo("\n\tGPU0\tGPU2\nGPU0\t X \tSYS\n"), "line 2",
                 "the header names GPU2 where GPU1 belongs");
}

TEST(ParseNvidiaSmiTopoTest, LongLinesAreQuotedShort) {
  std::string header(kHeader2);
  auto links = parse_nvidia_smi_topo(header + "GPU0\t X \tBAD" + std::string(500, 'x') + "\n");
  ASSERT_FALSE(links.has_value());
  EXPECT_LT(links.error().message.size(), 400u) << links.error().message;
}

TEST(FakeLinksTest, PairsWithALoneLastGpu) {
  EXPECT_EQ(fake_links(4), (Links{{0, 104, 0, 0}, {104, 0, 0, 0}, {0, 0, 0, 104}, {0, 0, 104, 0}}));
  EXPECT_EQ(fake_links(3), (Links{{0, 104, 0}, {104, 0, 0}, {0, 0, 0}}));
  EXPECT_EQ(fake_links(1), (Links{{0}}));
  EXPECT_TRUE(fake_links(0).empty());
}

TEST(SelectLinksTest, KeepsTheGivenGpusInTheGivenOrder) {
  Links machine{{0, 104, 20, 0}, {104, 0, 20, 0}, {20, 20, 0, 104}, {0, 0, 104, 0}};
  auto links = select_links(machine, {3, 0, 2});
  ASSERT_TRUE(links.has_value()) << links.error().message;
  EXPECT_EQ(*links, (Links{{0, 0, 104}, {0, 0, 20}, {104, 20, 0}}));
  auto none = select_links(machine, {});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(SelectLinksTest, AnIndexOutsideTheMatrixIsAnError) {
  Links machine{{0, 104}, {104, 0}};
  auto links = select_links(machine, {0, 2});
  ASSERT_FALSE(links.has_value());
  EXPECT_EQ(links.error().code, Code::kCorruption);
  EXPECT_NE(links.error().message.find("no row for GPU2 (its matrix has 2 GPUs)"),
            std::string::npos)
      << links.error().message;
}

}  // namespace
}  // namespace gpuq::gpu
