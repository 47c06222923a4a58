// A one-way flag a caller sets when it no longer wants the result of work it handed to another
// thread (its client went away), so work not started by then can be skipped. Shared by both.
#pragma once

#include <atomic>
#include <memory>

namespace xb {

using CancelFlag = std::shared_ptr<const std::atomic<bool>>;

}  // namespace xb
