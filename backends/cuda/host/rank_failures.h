// What the drivers that run every rank of a program in one process (ccopt_host_driver.h, the
// CPU harness; ../shared_gpu/shared_gpu_driver.h) hand back: one line per failed rank in
// `report`, and how many failed.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace ccopt_driver {

inline int report_failures(const std::vector<std::string>& errors, char* report, long report_size) {
  std::string all;
  int failed = 0;
  for (const std::string& e : errors)
    if (!e.empty()) {
      all += e + "\n";
      ++failed;
    }
  std::snprintf(report, (size_t)report_size, "%s", all.c_str());
  return failed;
}

}  // namespace ccopt_driver
