// AvailableCores() and CgroupCpuLimit() on fake cgroup trees in a temp dir
// (the Python suite runs the same trees through gpucost.cgroup_cpu_limit).
#include "gpucost/cores.h"

#ifdef __linux__
#include <sched.h>
#endif

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpucost {
namespace {

namespace fs = std::filesystem;

class CgroupCpuLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / (std::string("gpucost_cores_") + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "fs");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `files` (paths under the cgroup root) and the /proc/self/cgroup text.
  void Tree(const std::string& proc, const std::map<std::string, std::string>& files) {
    for (const auto& [name, text] : files) {
      const fs::path path = dir_ / "fs" / name;
      fs::create_directories(path.parent_path());
      std::ofstream(path) << text;
    }
    std::ofstream(dir_ / "cgroup") << proc;
  }
  std::optional<int> Limit() { return CgroupCpuLimit(Root(), (dir_ / "cgroup").string()); }
  [[nodiscard]] std::string Root() const { return (dir_ / "fs").string(); }

  fs::path dir_;
};

TEST_F(CgroupCpuLimitTest, V2WithoutLimit) {
  Tree("0::/\n", {{"cpu.max", "max 100000\n"}});
  EXPECT_EQ(Limit(), std::nullopt);
}

TEST_F(CgroupCpuLimitTest, V2QuotaRoundedUp) {
  Tree("0::/\n", {{"cpu.max", "200000 100000\n"}});
  EXPECT_EQ(Limit(), 2);
  Tree("0::/\n", {{"cpu.max", "150000 100000\n"}});  // 1.5 CPUs
  EXPECT_EQ(Limit(), 2);
  Tree("0::/\n", {{"cpu.max", "50000 100000\n"}});
  EXPECT_EQ(Limit(), 1);
}

TEST_F(CgroupCpuLimitTest, TightestLimitOfThePathUpToTheRoot) {
  Tree("0::/kubepods/pod1/c1\n", {{"kubepods/pod1/c1/cpu.max", "max 100000"},
                                  {"kubepods/pod1/cpu.max", "400000 100000"},
                                  {"kubepods/cpu.max", "1600000 100000"},
                                  {"cpu.max", "800000 100000"}});
  EXPECT_EQ(Limit(), 4);
  Tree("0::/kubepods/pod1/c1\n", {{"kubepods/pod1/c1/cpu.max", "100000 100000"}});
  EXPECT_EQ(Limit(), 1);  // the process's own cgroup is the tightest
}

TEST_F(CgroupCpuLimitTest, NoCpuControllerFile) {
  Tree("0::/\n", {});
  EXPECT_EQ(Limit(), std::nullopt);
}

TEST_F(CgroupCpuLimitTest, V1UnderTheHierarchyTheLineNames) {
  Tree("4:memory:/x\n1:cpu,cpuacct:/docker/abc\n0::/\n",
       {{"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000"},
        {"cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000"},
        {"memory/x/cpu.cfs_quota_us", "100000"},  // not the cpu controller: not read
        {"memory/x/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(Limit(), 3);
}

TEST_F(CgroupCpuLimitTest, V1UnderCpuWhenTheNamedHierarchyIsAbsent) {
  Tree("3:cpuacct,cpu:/slurm/job1\n", {{"cpu/slurm/job1/cpu.cfs_quota_us", "250000"},
                                       {"cpu/slurm/job1/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(Limit(), 3);
}

TEST_F(CgroupCpuLimitTest, V1WithoutLimit) {
  Tree("1:cpu:/\n", {{"cpu/cpu.cfs_quota_us", "-1"}, {"cpu/cpu.cfs_period_us", "100000"}});
  EXPECT_EQ(Limit(), std::nullopt);
}

TEST_F(CgroupCpuLimitTest, UnreadableValuesLimitNothing) {
  for (const char* text : {"garbage", "max", "100000", "100000 0", "0 100000", "nan 100000", "1e999 100000",
                           "200000 100000 7", ""}) {
    Tree("0::/\n", {{"cpu.max", text}});
    EXPECT_EQ(Limit(), std::nullopt) << text;
  }
}

TEST_F(CgroupCpuLimitTest, ParentFoldersAreNotClimbedOutOf) {
  Tree("0::/../../etc\n", {{"etc/cpu.max", "200000 100000"}});
  EXPECT_EQ(Limit(), 2);  // ".." parts are dropped, as the kernel never writes them
}

TEST_F(CgroupCpuLimitTest, WithoutProcFileReadsTheNamespaceRoot) {
  Tree("", {{"cpu.max", "300000 100000"}});
  EXPECT_EQ(CgroupCpuLimit(Root(), (dir_ / "absent").string()), 3);
  EXPECT_EQ(Limit(), 3);  // an empty file: the same
  EXPECT_EQ(CgroupCpuLimit((dir_ / "nothing").string(), (dir_ / "absent").string()), std::nullopt);
}

TEST(AvailableCoresTest, AtLeastOneAndAtMostTheLimitAndTheMachine) {
  const int cores = AvailableCores();
  EXPECT_GE(cores, 1);
  if (const std::optional<int> limit = CgroupCpuLimit(); limit.has_value()) {
    EXPECT_LE(cores, *limit);
  }
  if (std::thread::hardware_concurrency() > 0) {
    EXPECT_LE(cores, static_cast<int>(std::thread::hardware_concurrency()));
  }
}

#ifdef __linux__
TEST(AvailableCoresTest, HonoursTheAffinityMask) {
  cpu_set_t before;
  CPU_ZERO(&before);
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int pinned = AvailableCores();
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);
  EXPECT_EQ(pinned, 1);
  const std::optional<int> limit = CgroupCpuLimit();
  const int allowed = CPU_COUNT(&before);
  EXPECT_EQ(AvailableCores(), limit.has_value() && *limit < allowed ? *limit : allowed);
}
#endif

}  // namespace
}  // namespace gpucost
