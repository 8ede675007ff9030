#include "host/thread_pool.h"

namespace moreau {

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
  if (n_threads <= 0) n_threads = 1;
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back(&ThreadPool::worker, this, i);
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// Chunk i of n items over p threads: [i n / p, (i + 1) n / p).
static void run_chunk(const std::function<void(int, int)>& fn, int n, int p, int i) {
  const int begin = static_cast<int>(static_cast<long long>(n) * i / p);
  const int end = static_cast<int>(static_cast<long long>(n) * (i + 1) / p);
  if (begin < end) fn(begin, end);
}

void ThreadPool::parallel_for(int n, const std::function<void(int, int)>& fn) {
  const int p = size();
  if (p == 1 || n <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    pending_ = p - 1;
    ++generation_;
  }
  wake_.notify_all();
  run_chunk(fn, n, p, 0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker(int index) {
  long seen = 0;
  for (;;) {
    const std::function<void(int, int)>* job;
    int n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    run_chunk(*job, n, size(), index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace moreau
