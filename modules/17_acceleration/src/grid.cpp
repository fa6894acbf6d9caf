// Given: the kernel emulator of kiln/grid.h, with ucontext coroutines for the threads of a block,
// and its counters of memory accesses.
#include "kiln/grid.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
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
  std::size_t count;  // the tensor's elements; the rest of `bytes` is padding
};
std::vector<BufferCounts> pending;  // buffers tracked for the next launch
std::vector<Memory> pending_memory, memory;
bool launching = false;
// Streams are numbered 0, 1, 2 for shared memory's loads, stores and atomics, then three for each
// tracked buffer: stream_of(buffer, access).
std::size_t streams = 3;
std::size_t stream_of(int buffer, Access access) {
  return static_cast<std::size_t>(buffer + 1) * 3 + static_cast<std::size_t>(access);
}
// Per thread of the running block: how many accesses of each stream it has made so far
// (issued[thread · streams + stream]).
std::vector<std::int64_t> issued;
// Every access of the running block, by request: lanes[stream · warps + warp] holds, for each k,
// the byte address of each of the warp's 32 lanes (kNoAccess where a lane made no k-th access).
// The vectors keep their room between blocks, so counting allocates nothing once they have grown.
constexpr std::uint64_t kNoAccess = ~std::uint64_t{0};
std::size_t warps = 1;  // per block
std::vector<std::vector<std::uint64_t>> lanes;

AccessCounts& counts_of(int buffer, Access access) {
  if (buffer == kSharedStream) return access == Access::load ? counts.shared_loads : counts.shared_stores;
  BufferCounts& b = counts.buffers.at(static_cast<std::size_t>(buffer));
  return access == Access::load ? b.loads : access == Access::store ? b.stores : b.atomics;
}

std::int64_t& issued_by_running(int buffer, Access access) {
  return issued[running->linear * streams + stream_of(buffer, access)];
}

void add_access(int buffer, Access access, std::uint64_t address) {
  if (!launching || !running) return;
  const auto k = static_cast<std::size_t>(issued_by_running(buffer, access)++);
  std::vector<std::uint64_t>& at = lanes[stream_of(buffer, access) * warps + running->linear / kWarp];
  if (at.size() < (k + 1) * kWarp) at.resize((k + 1) * kWarp, kNoAccess);
  at[k * kWarp + running->linear % kWarp] = address;
  ++counts_of(buffer, access).accesses;
}

// A global request costs one transaction per distinct 128-byte segment; a shared one as many
// passes as the most distinct words in one bank. `addresses` is sorted.
std::int64_t cost(bool shared, const std::uint64_t* addresses, std::size_t n) {
  std::int64_t distinct = 0;
  if (!shared) {
    for (std::size_t i = 0; i < n; ++i) distinct += i == 0 || addresses[i] / kSegmentBytes != addresses[i - 1] / kSegmentBytes;
    return distinct;
  }
  std::int64_t words_in_bank[kBanks] = {};
  std::int64_t passes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && addresses[i] / 4 == addresses[i - 1] / 4) continue;  // the same word: a broadcast
    passes = std::max(passes, ++words_in_bank[(addresses[i] / 4) % kBanks]);
  }
  return passes;
}

// At the end of a block: every request it made, costed.
void settle_block() {
  for (std::size_t stream = 0; stream < streams; ++stream) {
    const int buffer = static_cast<int>(stream / 3) - 1;
    AccessCounts& c = counts_of(buffer, static_cast<Access>(stream % 3));
    for (std::size_t warp = 0; warp < warps; ++warp) {
      std::vector<std::uint64_t>& at = lanes[stream * warps + warp];
      for (std::size_t k = 0; k < at.size() / kWarp; ++k) {
        std::uint64_t request[kWarp];
        std::size_t n = 0;
        for (std::size_t lane = 0; lane < kWarp; ++lane)
          if (at[k * kWarp + lane] != kNoAccess) request[n++] = at[k * kWarp + lane];
        std::sort(request, request + n);
        const std::int64_t cost_of_request = cost(buffer == kSharedStream, request, n);
        ++c.requests;
        c.transactions += cost_of_request;
        c.max_per_request = std::max(c.max_per_request, cost_of_request);
      }
      at.clear();
    }
  }
}

// "thread (3, 15) of block (0, 1)": the running thread, as the messages name it.
std::string who_is_running() {
  return "thread (" + std::to_string(threadIdx.x) + ", " + std::to_string(threadIdx.y) + ") of block (" +
         std::to_string(blockIdx.x) + ", " + std::to_string(blockIdx.y) + ")";
}

const char* verb(Access access) {
  return access == Access::load ? "loaded" : access == Access::store ? "stored to" : "added to";
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
  pending_memory.push_back({reinterpret_cast<std::uintptr_t>(data), element_bytes, allocated * element_bytes, count});
}

void record_global(Access access, const void* address) {
  if (!launching || !running) return;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  for (std::size_t buffer = 0; buffer < memory.size(); ++buffer) {
    const Memory& mem = memory[buffer];
    if (at < mem.begin || at >= mem.begin + mem.bytes) continue;
    const std::uint64_t offset = at - mem.begin;  // from the buffer's start, as cudaMalloc aligns it
    if (offset / mem.element_bytes >= mem.count && counts.stray.empty()) {
      counts.stray = who_is_running() + " " + verb(access) + " element " + std::to_string(offset / mem.element_bytes) +
                     " of " + counts.buffers[buffer].name + ", which holds " + std::to_string(mem.count);
    }
    if (access == Access::load && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 &&
        running->linear < kWarp && issued_by_running(static_cast<int>(buffer), access) == 0) {
      std::vector<std::int64_t>& first = counts.buffers[buffer].first_request;
      first.resize(kWarp, -1);
      first[running->linear] = static_cast<std::int64_t>(offset / mem.element_bytes);
    }
    add_access(static_cast<int>(buffer), access, offset);
    std::vector<std::int64_t>& reads = counts.buffers[buffer].reads;
    if (access == Access::load && offset / mem.element_bytes < reads.size()) ++reads[offset / mem.element_bytes];
    return;
  }
  if (counts.stray.empty())
    counts.stray = who_is_running() + " " + verb(access) + " an address outside every buffer of the launch";
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
  streams = (memory.size() + 1) * 3;
  warps = (count + kWarp - 1) / kWarp;
  if (lanes.size() < streams * warps) lanes.resize(streams * warps);
  for (auto& at : lanes) at.clear();
  launching = true;
  struct Done {
    ~Done() { launching = false; }
  } done;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIdx = {bx, by, bz};
        issued.assign(count * streams, 0);
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
