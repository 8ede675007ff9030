// libFuzzer target: moreau's JSON robot format on arbitrary bytes, parsed and compiled, must
// return a Model or throw moreau::Error; anything else (a crash, a sanitizer report, another
// exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "moreau/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    moreau::compile(moreau::parse_robot_json(text, "fuzz.json"));
  } catch (const moreau::Error&) {
  }
  return 0;
}
