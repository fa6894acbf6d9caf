// Given: the kernel emulator of kiln/grid.h, with ucontext coroutines for the threads of a block,
// and its counters of memory accesses.
#include "kiln/grid.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace kiln::grid {

Dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

constexpr std::size_t kStackBytes = 64 * 1024;

struct Thread {
  ucontext_t context;
  Dim3 index;
  std::size_t linear = 0;  // x + y·blockDim.x + z·blockDim.x·blockDim.y, as CUDA numbers threads
  bool finished = false;
  bool waiting = false;
};

ucontext_t scheduler;
Thread* running = nullptr;
const std::function<void()>* kernel_body = nullptr;
std::exception_ptr failure;

// ---- Counting ----
// An access stream: the loads (or stores, or atomics) of one global buffer, or of shared memory.
// The k-th access of a stream by each thread of a warp forms one request.
constexpr std::size_t kWarp = 32;
constexpr std::uint64_t kSegmentBytes = 128;
constexpr std::uint64_t kBanks = 32;
constexpr int kSharedStream = -1;

LaunchCounts counts;
// Where each tracked buffer lies: counts.buffers[i] is memory[i].
struct Memory {
  std::uintptr_t begin;
  std::size_t element_bytes, bytes;
};
std::vector<BufferCounts> pending;  // buffers tracked for the next launch
std::vector<Memory> pending_memory, memory;
bool launching = false;
// Per thread of the running block: how many accesses of each stream it has made so far.
std::vector<std::map<std::pair<int, Access>, std::int64_t>> issued;
// (stream buffer, access, warp, k) -> the byte addresses of that request's threads.
std::map<std::tuple<int, Access, std::size_t, std::int64_t>, std::vector<std::uint64_t>> requests;

AccessCounts& counts_of(int buffer, Access access) {
  if (buffer == kSharedStream) return access == Access::load ? counts.shared_loads : counts.shared_stores;
  BufferCounts& b = counts.buffers.at(static_cast<std::size_t>(buffer));
  return access == Access::load ? b.loads : access == Access::store ? b.stores : b.atomics;
}

void add_access(int buffer, Access access, std::uint64_t address) {
  if (!launching || !running) return;
  const std::int64_t k = issued[running->linear][{buffer, access}]++;
  requests[{buffer, access, running->linear / kWarp, k}].push_back(address);
  ++counts_of(buffer, access).accesses;
}

// A global request costs one transaction per distinct 128-byte segment; a shared one as many
// passes as the most distinct words in one bank.
std::int64_t cost(bool shared, const std::vector<std::uint64_t>& addresses) {
  if (!shared) {
    std::set<std::uint64_t> segments;
    for (std::uint64_t a : addresses) segments.insert(a / kSegmentBytes);
    return static_cast<std::int64_t>(segments.size());
  }
  std::map<std::uint64_t, std::set<std::uint64_t>> words_in_bank;
  for (std::uint64_t a : addresses) words_in_bank[(a / 4) % kBanks].insert(a / 4);
  std::size_t passes = 0;
  for (const auto& [bank, words] : words_in_bank) passes = std::max(passes, words.size());
  return static_cast<std::int64_t>(passes);
}

// At the end of a block: every request it made, costed.
void settle_block() {
  for (const auto& [key, addresses] : requests) {
    const auto& [buffer, access, warp, k] = key;
    AccessCounts& c = counts_of(buffer, access);
    const std::int64_t n = cost(buffer == kSharedStream, addresses);
    ++c.requests;
    c.transactions += n;
    c.max_per_request = std::max(c.max_per_request, n);
  }
  requests.clear();
}

void thread_entry() {
  try {
    (*kernel_body)();
  } catch (...) {
    if (!failure) failure = std::current_exception();
  }
  running->finished = true;  // returning resumes the scheduler (uc_link)
}

}  // namespace

const BufferCounts& LaunchCounts::buffer(std::string_view name) const {
  for (const BufferCounts& b : buffers)
    if (b.name == name) return b;
  throw std::out_of_range("the launch tracked no buffer named " + std::string(name));
}

const LaunchCounts& last_launch() { return counts; }

void register_buffer(std::string name, const void* data, std::size_t element_bytes, std::size_t count,
                     std::size_t allocated) {
  BufferCounts b;
  b.name = std::move(name);
  b.reads.assign(count, 0);
  pending.push_back(std::move(b));
  pending_memory.push_back({reinterpret_cast<std::uintptr_t>(data), element_bytes, allocated * element_bytes});
}

void record_global(Access access, const void* address) {
  if (!launching || !running) return;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  for (std::size_t buffer = 0; buffer < memory.size(); ++buffer) {
    const Memory& mem = memory[buffer];
    if (at < mem.begin || at >= mem.begin + mem.bytes) continue;
    const std::uint64_t offset = at - mem.begin;  // from the buffer's start, as cudaMalloc aligns it
    if (access == Access::load && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 &&
        running->linear < kWarp && issued[running->linear][{static_cast<int>(buffer), access}] == 0) {
      std::vector<std::int64_t>& first = counts.buffers[buffer].first_request;
      first.resize(kWarp, -1);
      first[running->linear] = static_cast<std::int64_t>(offset / mem.element_bytes);
    }
    add_access(static_cast<int>(buffer), access, offset);
    std::vector<std::int64_t>& reads = counts.buffers[buffer].reads;
    if (access == Access::load && offset / mem.element_bytes < reads.size()) ++reads[offset / mem.element_bytes];
    return;
  }
}

void record_shared(Access access, const void* address) {
  add_access(kSharedStream, access, reinterpret_cast<std::uintptr_t>(address));
}

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
  counts = LaunchCounts{};
  counts.buffers = std::move(pending);
  memory = std::move(pending_memory);
  pending.clear();
  pending_memory.clear();
  counts.blocks = std::int64_t(grid.x) * grid.y * grid.z;
  counts.threads_per_block = static_cast<std::int64_t>(count);
  counts.warps = counts.blocks * static_cast<std::int64_t>((count + kWarp - 1) / kWarp);
  requests.clear();
  launching = true;
  struct Done {
    ~Done() { launching = false; }
  } done;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = {bx, by, bz};
        issued.assign(count, {});
        for (std::size_t t = 0; t < count; ++t) {
          Thread& thread = threads[t];
          thread = Thread{};
          thread.index = {unsigned(t % block.x), unsigned(t / block.x % block.y), unsigned(t / (block.x * block.y))};
          thread.linear = t;
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
          ++counts.barriers;
          if (finished > 0) {
            throw std::logic_error("kiln_syncthreads() was not reached by every thread of block (" +
                                   std::to_string(bx) + ", " + std::to_string(by) +
                                   "): a barrier inside a branch that some threads skip");
          }
        }
        settle_block();
      }
}

}  // namespace kiln::grid
