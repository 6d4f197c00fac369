// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::Pipeline: stages on different contexts or devices, chained by events.

#include "cuctx/context.hpp"
#include "cuctx/event.hpp"
#include "cuctx/export.hpp"
#include "cuctx/stream.hpp"

#include <cstddef>
#include <functional>
#include <vector>

namespace cuctx {

/// Stages on different contexts or devices, chained by events: each stage's work for an item waits
/// only on the previous stage's event for that item, never on the host. Each stage has a stream and
/// an event of its own, made with the pipeline.
///
/// \par Threading
/// Thread-compatible: submit() from one thread at a time (any thread; concurrent submits would
/// chain one item's stage to another item's event); synchronize(), size() and stream() are
/// thread-safe. Each stage's `work` is reentrant: it is called on the submitting thread, with no lock
/// of cuctx's held, and may call cuctx.
class CUCTX_API Pipeline {
public:
    /// One stage: where it runs and what it queues. A value type.
    struct Stage {
        Context context; ///< the context the stage's stream and event belong to
        /// Queues the stage's work for `item` on `stream` (a stream of `context`); must not block.
        std::function<void(const Stream& stream, std::size_t item)> work;
    };

    /// Makes a stream and an event in each stage's context. Errc::invalid_argument for no stages, or
    /// a stage without a context or work.
    explicit Pipeline(std::vector<Stage> stages);

    /// Queues every stage for `item`: stage i waits for stage i-1's work on the same item (and, being
    /// on one stream, for its own previous items). Returns without waiting for the device.
    void submit(std::size_t item);
    /// Waits for everything submitted.
    void synchronize() const;

    /// The number of stages.
    std::size_t size() const noexcept { return stages_.size(); }
    /// Stage `stage`'s stream (std::out_of_range past the last).
    const Stream& stream(std::size_t stage) const { return streams_.at(stage); }

private:
    std::vector<Stage> stages_;
    std::vector<Stream> streams_;
    std::vector<Event> done_; // done_[i]: stage i's last submitted item
};

} // namespace cuctx
