// Where an exception was thrown. Every test program is linked with --wrap=__cxa_throw, so each
// `throw` in it (student code included) passes through here first: the thrown object and the
// return addresses of the frames that threw it are noted, and when observe() catches an exception
// that escaped student code, the place it was thrown goes to the grader as a "thrown" event (the
// grader turns the addresses into functions and lines). Exceptions thrown inside the standard
// library's own compiled code do not pass here and have no place: observe() forgets every earlier
// throw before its call, so that such an exception, taking the memory an earlier one left, is
// never placed where that one was thrown.
#include <dlfcn.h>
#include <execinfo.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <typeinfo>
#include <vector>

#include <fmt/format.h>

#include "kiln/observe.h"
#include "thrown.h"

extern "C" [[noreturn]] void __real___cxa_throw(void* object, std::type_info* type, void (*destroy)(void*));

namespace {

constexpr int kFrames = 8;
struct Throw {
  void* object = nullptr;
  std::array<void*, kFrames> frames{};
  int count = 0;
};
// The last few throws of this thread: a function that catches its own exception and throws
// another is normal.
thread_local std::array<Throw, 4> recent;
thread_local unsigned next_slot = 0;

}  // namespace

extern "C" [[noreturn]] void __wrap___cxa_throw(void* object, std::type_info* type, void (*destroy)(void*)) {
  Throw& t = recent[next_slot++ % recent.size()];
  t.object = object;
  void* frames[kFrames + 1];
  const int n = backtrace(frames, kFrames + 1);  // frames[0] is this function
  t.count = n > 1 ? n - 1 : 0;
  for (int i = 0; i < t.count; ++i) t.frames[static_cast<std::size_t>(i)] = frames[i + 1];
  __real___cxa_throw(object, type, destroy);
}

namespace kiln::testing::detail {

// Declared in kiln/observe.h, which observe() calls before each call it observes.
void forget_throws() {
  for (Throw& t : recent) t.object = nullptr;
}

std::vector<std::string> thrown_at() {
  // The exception being handled is known by its object: libstdc++'s exception_ptr holds nothing but
  // a pointer to it, the pointer __cxa_throw was given.
  static_assert(sizeof(std::exception_ptr) == sizeof(void*), "an exception_ptr that is not libstdc++'s");
  const std::exception_ptr current = std::current_exception();
  void* object = nullptr;
  std::memcpy(&object, &current, sizeof object);
  if (object == nullptr) return {};
  // Offsets into this program (position-independent), one byte before each return address: the call.
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&thrown_at), &self) == 0 || self.dli_fbase == nullptr) return {};
  std::vector<std::string> out;
  // Newest first: an exception's memory is reused by the next one of its size, so an older slot
  // may hold the same object address with another throw's frames.
  for (unsigned k = 1; k <= recent.size(); ++k) {
    const Throw& t = recent[(next_slot - k) % recent.size()];
    if (t.object != object) continue;
    for (int i = 0; i < t.count; ++i) {
      Dl_info where{};
      void* address = t.frames[static_cast<std::size_t>(i)];
      if (dladdr(address, &where) == 0 || where.dli_fbase != self.dli_fbase) continue;
      const auto offset = reinterpret_cast<std::uintptr_t>(address) - reinterpret_cast<std::uintptr_t>(self.dli_fbase);
      out.push_back(fmt::format("0x{:x}", offset > 0 ? offset - 1 : offset));
    }
    break;
  }
  return out;
}

}  // namespace kiln::testing::detail
