// Reading Alibaba PAI's GPU trace tables (sim/pai_trace.hpp): the join of jobs, tasks and sensors,
// what is skipped, our writer read back, and the sample in bench/traces/pai-sample.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include "messages/run_request.hpp"
#include "sim/pai_trace.hpp"
#include "sim/trace_shapes.hpp"
#include "testkit/home.hpp"

using namespace cdui::sim;

namespace {

constexpr std::int64_t gib = static_cast<std::int64_t>(cdui::bytes_per_gib);

void write(const std::filesystem::path& file, const std::string& text) { std::ofstream{file} << text; }

} // namespace

BOOST_AUTO_TEST_SUITE(pai_trace_test)

BOOST_AUTO_TEST_CASE(jobs_tasks_and_sensors_join_into_runs) {
  cdui::test::temp_home dir;
  write(dir.path() / "pai_job_table.csv",
        "job_name,inst_id,user,status,start_time,end_time\n"
        "a,ia,u,Terminated,1000.0,2000.0\n"
        "b,ib,u,Terminated,900.0,5000.0\n"
        "c,ic,u,Failed,950.0,960.0\n"
        "d,id,u,Terminated,990.0,995.0\n"
        "e,ie,u,Terminated,980.0,999.0\n");
  write(dir.path() / "pai_task_table.csv",
        "a,tensorflow,1.0,Terminated,1010.0,1610.0,600.0,29.296875,50.0,V100\n"
        "b,ps,1.0,Terminated,950.0,4000.0,600.0,29.296875,0.0,\n"
        "b,worker,4.0,Terminated,1000.0,4600.0,600.0,29.296875,100.0,V100\n"
        "c,worker,1.0,Failed,950.0,960.0,600.0,29.296875,100.0,V100\n"
        "d,worker,1.0,Terminated,990.0,995.0,600.0,29.296875,,\n"
        "e,worker,1.0,Terminated,980.0,999.0,600.0,29.296875,100.0,T4\n");
  write(dir.path() / "pai_sensor_table.csv",
        "a,tensorflow,wa,ia,m1,/dev/nvidia0,140.1,16.0,1.4,2.3,1.2,2.3994140625,0,0,0,0\n"
        "b,worker,wb0,ib,m2,/dev/nvidia0,140.1,16.0,1.4,2.3,1.2,10.5,0,0,0,0\n"
        "b,worker,wb1,ib,m2,/dev/nvidia1,140.1,16.0,1.4,2.3,1.2,12.25,0,0,0,0\n"
        "e,worker,we,ie,m3,/dev/nvidia0,140.1,16.0,1.4,2.3,,,0,0,0,0\n");
  auto read = read_pai(dir.path());
  BOOST_REQUIRE(std::holds_alternative<pai_trace>(read));
  const auto& t = std::get<pai_trace>(read);
  BOOST_TEST(t.not_terminated == 1u);    // c
  BOOST_TEST(t.no_gpu == 1u);            // d: no plan_gpu
  BOOST_TEST(t.no_memory_figure == 1u);  // e: its sensor has no max_gpu_wrk_mem
  BOOST_REQUIRE_EQUAL(t.jobs.size(), 2u);
  // b was submitted first (900): 4 workers of a GPU each, its ps asks for none; its longest task.
  BOOST_TEST(t.jobs[0].arrival == 0);
  BOOST_TEST(t.jobs[0].cards == 4);
  BOOST_TEST(t.jobs[0].duration == 3600);
  BOOST_TEST(t.jobs[0].peak == static_cast<std::int64_t>(12.25 * gib));
  // a: half a GPU is a card.
  BOOST_TEST(t.jobs[1].arrival == 100);
  BOOST_TEST(t.jobs[1].cards == 1);
  BOOST_TEST(t.jobs[1].duration == 600);
  BOOST_TEST(t.jobs[1].peak == 2457LL * 1024 * 1024);
}

BOOST_AUTO_TEST_CASE(a_missing_table_or_short_row_is_named) {
  cdui::test::temp_home dir;
  auto read = read_pai(dir.path());
  BOOST_REQUIRE(std::holds_alternative<std::string>(read));
  BOOST_TEST(std::get<std::string>(read).find("pai_job_table.csv") != std::string::npos);
  write(dir.path() / "pai_job_table.csv", "a,ia,u,Terminated,1000.0\n");
  write(dir.path() / "pai_task_table.csv", "");
  write(dir.path() / "pai_sensor_table.csv", "");
  read = read_pai(dir.path());
  BOOST_REQUIRE(std::holds_alternative<std::string>(read));
  BOOST_TEST(std::get<std::string>(read).find("line 1: 5 fields, not 6") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(what_the_writer_writes_reads_back) {
  cdui::test::temp_home dir;
  auto cluster = std::get<cluster_spec>(cluster_spec::parse("4x8x32"));
  auto jobs = generate({trace_shape::mix, 300, 1.0, 8}, cluster);
  for (auto& j : jobs)
    j.peak = j.peak / (1 << 20) * (1 << 20);  // whole MiB, as the writer keeps them
  write_pai(dir.path(), jobs, 8);
  auto read = read_pai(dir.path());
  BOOST_REQUIRE(std::holds_alternative<pai_trace>(read));
  const auto& back = std::get<pai_trace>(read).jobs;
  BOOST_REQUIRE_EQUAL(back.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    BOOST_TEST_CONTEXT("job " << i) {
      BOOST_TEST(back[i].arrival == jobs[i].arrival);
      BOOST_TEST(back[i].cards == jobs[i].cards);
      BOOST_TEST(back[i].peak == jobs[i].peak);
      BOOST_TEST(back[i].duration == jobs[i].duration);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_sample_in_the_repository_reads) {
  auto read = read_pai(std::filesystem::path{CDUI_SOURCE_DIR} / "bench/traces/pai-sample");
  BOOST_REQUIRE(std::holds_alternative<pai_trace>(read));
  const auto& t = std::get<pai_trace>(read);
  BOOST_TEST(t.jobs.size() == 300u);
  BOOST_TEST(t.not_terminated + t.no_gpu + t.no_memory_figure == 0u);
  BOOST_TEST(t.jobs.front().arrival == 0);
}

BOOST_AUTO_TEST_SUITE_END()
