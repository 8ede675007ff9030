// libFuzzer target: parse_mjcf on arbitrary bytes must return a RobotSpec or throw
// moreau::Error; anything else (a crash, a sanitizer report, another exception) is a bug.
// Includes resolve in a directory that does not exist, so the target reads no files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "moreau/import.h"
#include "moreau/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    moreau::parse_mjcf(text, "fuzz.xml", "/nonexistent/moreau-fuzz");
  } catch (const moreau::Error&) {
  }
  return 0;
}
