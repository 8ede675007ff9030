// libFuzzer target: parse_urdf on arbitrary bytes must return a RobotSpec or throw
// moreau::Error; anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "moreau/import.h"
#include "moreau/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  moreau::UrdfOptions options;
  options.contact_bodies = {"*FOOT*", "b?se"};
  options.kp = 50;
  try {
    moreau::parse_urdf(text, "fuzz.urdf", options);
  } catch (const moreau::Error&) {
  }
  return 0;
}
