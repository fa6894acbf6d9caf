// Where an exception was thrown. Every test program is linked with --wrap=__cxa_throw, so each
// `throw` in it (student code included) passes through here first: the thrown object and the
// return addresses of the frames that threw it are noted, and when observe() catches an exception
// that escaped student code, the place it was thrown goes to the grader as a "thrown" event (the
// grader turns the addresses into functions and lines). The errors libstdc++ throws from its own
// compiled code (vector::at's out_of_range, std::stoi's invalid_argument, a vector's length_error)
// would not pass there: the program is also linked with --wrap for each function libstdc++ throws
// them from, and the wrappers below throw the same exception with the same message from this
// program instead. observe() forgets every earlier throw before its call, so that an exception
// thrown where nothing notes it (a library of the system's, not compiled into the program) is
// never placed where an earlier one, whose memory it took, was thrown.
#include <dlfcn.h>
#include <execinfo.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <stdexcept>
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

// libstdc++'s std::__throw_* functions (bits/functexcept.h), by their symbols: what each throws.
// The list of symbols is grader/testing/CMakeLists.txt's KILN_WRAP_THROWS.
extern "C" {
[[noreturn]] void __wrap__ZSt20__throw_out_of_rangePKc(const char* what) { throw std::out_of_range(what); }
[[noreturn]] void __wrap__ZSt24__throw_out_of_range_fmtPKcz(const char* format, ...) {
  // libstdc++ fills in %s, %zu, %lu and %% (its snprintf_lite), as vsnprintf does.
  std::string what(std::strlen(format) + 512, '\0');
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(what.data(), what.size(), format, args);
  va_end(args);
  what.resize(n < 0 ? 0 : std::min(static_cast<std::size_t>(n), what.size() - 1));
  throw std::out_of_range(what);
}
[[noreturn]] void __wrap__ZSt24__throw_invalid_argumentPKc(const char* what) { throw std::invalid_argument(what); }
[[noreturn]] void __wrap__ZSt20__throw_length_errorPKc(const char* what) { throw std::length_error(what); }
[[noreturn]] void __wrap__ZSt19__throw_logic_errorPKc(const char* what) { throw std::logic_error(what); }
[[noreturn]] void __wrap__ZSt20__throw_domain_errorPKc(const char* what) { throw std::domain_error(what); }
[[noreturn]] void __wrap__ZSt19__throw_range_errorPKc(const char* what) { throw std::range_error(what); }
[[noreturn]] void __wrap__ZSt22__throw_overflow_errorPKc(const char* what) { throw std::overflow_error(what); }
[[noreturn]] void __wrap__ZSt23__throw_underflow_errorPKc(const char* what) { throw std::underflow_error(what); }
[[noreturn]] void __wrap__ZSt21__throw_runtime_errorPKc(const char* what) { throw std::runtime_error(what); }
[[noreturn]] void __wrap__ZSt17__throw_bad_allocv() { throw std::bad_alloc(); }
[[noreturn]] void __wrap__ZSt28__throw_bad_array_new_lengthv() { throw std::bad_array_new_length(); }
[[noreturn]] void __wrap__ZSt25__throw_bad_function_callv() { throw std::bad_function_call(); }
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
