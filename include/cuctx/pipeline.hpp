// SPDX-License-Identifier: MIT
#pragma once

// cuctx::Pipeline: stages on different contexts or devices, chained by events: each stage's work for
// an item waits only on the previous stage's event for that item, never on the host. Thread-bound:
// submit from one thread at a time.

#include "cuctx/context.hpp"
#include "cuctx/event.hpp"
#include "cuctx/export.hpp"
#include "cuctx/stream.hpp"

#include <cstddef>
#include <functional>
#include <vector>

namespace cuctx {

class CUCTX_API Pipeline {
public:
    struct Stage {
        Context context;
        /// Queues the stage's work for `item` on `stream` (a stream of `context`); must not block.
        std::function<void(const Stream& stream, std::size_t item)> work;
    };

    explicit Pipeline(std::vector<Stage> stages);

    /// Queues every stage for `item`: stage i waits for stage i-1's work on the same item (and, being
    /// on one stream, for its own previous items). Returns without waiting for the device.
    void submit(std::size_t item);
    /// Waits for everything submitted.
    void synchronize() const;

    std::size_t size() const noexcept { return stages_.size(); }
    const Stream& stream(std::size_t stage) const { return streams_.at(stage); }

private:
    std::vector<Stage> stages_;
    std::vector<Stream> streams_;
    std::vector<Event> done_; // done_[i]: stage i's last submitted item
};

} // namespace cuctx
