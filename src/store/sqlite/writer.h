// The single writer of the embedded engine (STORE.md 8): one thread owns the writer connection
// and runs write jobs one at a time, in arrival order. Because only one write transaction exists
// at a time, commit order equals id order and BEGIN IMMEDIATE replaces every PostgreSQL lock.
//
// Threading: Run is thread-safe and blocks the caller (a DB pool thread). No call may be in flight
// when the Writer is destroyed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "store/sqlite/connection.h"
#include "store/store.h"

namespace xb::store::sqlite {

class Writer {
 public:
  // Takes the writer connection and starts the thread. At most `max_queue` (>= 1) jobs wait.
  Writer(std::unique_ptr<Connection> conn, size_t max_queue);
  // Lets the running job finish, fails every queued job ("the store is closing"), joins.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Runs `job` on the writer thread with `deadline` armed on the connection (a statement still
  // running after it stops with SQLITE_INTERRUPT). Blocks until the job has run and returns
  // nullopt; or returns kTimeout when `deadline` passes while the job waits for queue space or for
  // its turn (the job then never runs); or kOther when the writer is closing. Once started, the
  // job is bounded by the deadline through its statements, so the caller waits for it to end: its
  // outcome (committed or not) is then known. A transaction the job leaves open is rolled back.
  StoreResult<void> Run(Clock::time_point deadline, const std::function<void(Connection&)>& job);

  // Group commit: like Run, but `job` runs inside one write transaction that the writer shares
  // with the other grouped jobs queued at the same time (each job uses a WriteTransaction, which
  // becomes a savepoint there), and the writer commits the group once: one fsync for all of them.
  // Returns nullopt only once the group's COMMIT succeeded; the COMMIT's error otherwise (the
  // job's own changes are then not stored either). `after_commit` (set once, before any job) runs
  // on the writer thread after every group commit attempt with whether it committed, before the
  // group's jobs are told; `after_completions`, if set, once they have been told.
  StoreResult<void> RunGrouped(Clock::time_point deadline,
                               const std::function<void(Connection&)>& job);
  void SetAfterGroupCommit(std::function<void(bool committed)> after_commit,
                           std::function<void()> after_completions = nullptr);

  // RunGrouped without blocking the caller: when fewer than kMaxAsyncQueue jobs are queued (so
  // the job starts within the next two group transactions), queues `job` and returns true;
  // `done` later runs on the writer thread, outside the writer's lock, with what RunGrouped would
  // have returned. A job whose deadline has passed when its turn comes does not run (kTimeout).
  // Otherwise returns false and neither function runs: the caller uses RunGrouped, whose wait
  // for queue space and for its turn is bounded by the deadline.
  static constexpr size_t kMaxAsyncQueue = 64;
  bool TryRunGroupedAsync(Clock::time_point deadline, std::function<void(Connection&)> job,
                          std::function<void(StoreResult<void>)> done);

 private:
  struct Job {
    const std::function<void(Connection&)>* fn = nullptr;
    Clock::time_point deadline;
    bool started = false;             // guarded by mu_
    bool done = false;                // guarded by mu_
    std::optional<StoreError> error;  // guarded by mu_; set when the job was failed without running
    bool grouped = false;             // const after queueing
    // The caller waits on it for `done`. Notified with mu_ held: the Job lives on the caller's
    // stack and may be gone as soon as mu_ is released after `done` is set.
    std::condition_variable cv;
    // Asynchronous jobs (TryRunGroupedAsync) are owned by the writer instead: `fn` points to
    // `owned_fn`, and `on_done` runs once the job is finished, outside mu_.
    std::function<void(Connection&)> owned_fn;
    std::function<void(StoreResult<void>)> on_done;
  };

  StoreResult<void> Enqueue(Job& entry);
  void Loop();
  // With mu_ held: marks `job` done and wakes its caller (only that caller); an asynchronous job
  // is moved to `completed` instead, for Complete to call back once mu_ is released.
  static void Finish(Job& job, std::vector<Job*>& completed);
  static void Complete(const std::vector<Job*>& completed);
  // Runs the grouped jobs at the front of the queue (already popped) in one transaction.
  void RunGroup(const std::vector<Job*>& group);

  // Const after construction.
  const size_t max_queue_;
  std::unique_ptr<Connection> conn_;  // used only by the writer thread after construction

  std::mutex mu_;
  std::condition_variable work_;   // the writer waits for a job or for stopping_
  std::condition_variable space_;  // callers wait for queue space
  std::deque<Job*> queue_;         // guarded by mu_; jobs live on their callers' stacks
  bool stopping_ = false;          // guarded by mu_

  std::function<void(bool)> after_group_commit_;   // set before the first grouped job
  std::function<void()> after_group_completions_;  // likewise

  std::thread thread_;  // last: started once every other member exists
};

}  // namespace xb::store::sqlite
