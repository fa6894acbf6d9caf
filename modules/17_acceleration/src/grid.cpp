// Given: the kernel emulator of kiln/grid.h, with ucontext coroutines for the threads of a block.
#include "kiln/grid.h"

#include <ucontext.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::grid {

Dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

constexpr std::size_t kStackBytes = 64 * 1024;

struct Thread {
  ucontext_t context;
  Dim3 index;
  bool finished = false;
  bool waiting = false;
};

ucontext_t scheduler;
Thread* running = nullptr;
const std::function<void()>* kernel_body = nullptr;
std::exception_ptr failure;

void thread_entry() {
  try {
    (*kernel_body)();
  } catch (...) {
    if (!failure) failure = std::current_exception();
  }
  running->finished = true;  // returning resumes the scheduler (uc_link)
}

}  // namespace

void syncthreads() {
  if (!running) throw std::logic_error("kiln_syncthreads() called outside a kernel launch");
  running->waiting = true;
  swapcontext(&running->context, &scheduler);
}

void launch_body(Dim3 grid, Dim3 block, const std::function<void()>& body) {
  const std::size_t count = std::size_t(block.x) * block.y * block.z;
  if (count == 0 || count > 1024) throw std::invalid_argument("a block holds 1 to 1024 threads");
  static std::vector<char> stacks;
  stacks.resize(count * kStackBytes);
  std::vector<Thread> threads(count);
  kernel_body = &body;
  failure = nullptr;
  gridDim = grid;
  blockDim = block;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = {bx, by, bz};
        for (std::size_t t = 0; t < count; ++t) {
          Thread& thread = threads[t];
          thread = Thread{};
          thread.index = {unsigned(t % block.x), unsigned(t / block.x % block.y), unsigned(t / (block.x * block.y))};
          getcontext(&thread.context);
          thread.context.uc_stack.ss_sp = stacks.data() + t * kStackBytes;
          thread.context.uc_stack.ss_size = kStackBytes;
          thread.context.uc_link = &scheduler;
          makecontext(&thread.context, thread_entry, 0);
        }
        // Rounds: run every thread to its next barrier (or its end); repeat while any waits.
        for (;;) {
          std::size_t waiting = 0, finished = 0;
          for (Thread& thread : threads) {
            if (thread.finished) continue;
            running = &thread;
            threadIdx = thread.index;
            thread.waiting = false;
            swapcontext(&scheduler, &thread.context);
            if (thread.waiting) ++waiting;
            if (thread.finished) ++finished;
          }
          running = nullptr;
          if (failure) std::rethrow_exception(failure);
          if (waiting == 0) break;
          if (finished > 0) {
            throw std::logic_error("kiln_syncthreads() was not reached by every thread of block (" +
                                   std::to_string(bx) + ", " + std::to_string(by) +
                                   "): a barrier inside a branch that some threads skip");
          }
        }
      }
}

}  // namespace kiln::grid
