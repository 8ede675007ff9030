// moreau host — a fixed pool of worker threads running one parallel loop at a time.
// Work is split into contiguous static chunks, so which thread handles which index never
// affects results.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace moreau {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads <= 0: std::thread::hardware_concurrency()
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) on contiguous chunks covering [0, n); the caller runs one chunk.
  void parallel_for(int n, const std::function<void(int, int)>& fn);

 private:
  void worker(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int, int)>* job_ = nullptr;
  int job_n_ = 0;
  long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace moreau
