// SPDX-License-Identifier: MIT
#include "cuctx/pipeline.hpp"

#include "check/check.hpp"

namespace cuctx {

Pipeline::Pipeline(std::vector<Stage> stages) : stages_(std::move(stages))
{
    if (stages_.empty())
        detail::throwError(Errc::invalid_argument, "cuctx::Pipeline", "a pipeline needs at least one stage");
    for (const Stage& s : stages_) {
        if (!s.context || !s.work)
            detail::throwError(Errc::invalid_argument, "cuctx::Pipeline",
                               "stage " + std::to_string(streams_.size()) + " has no context or no work");
        streams_.emplace_back(s.context);
        done_.emplace_back(s.context);
    }
}

void Pipeline::submit(std::size_t item)
{
    for (std::size_t i = 0; i < stages_.size(); ++i) {
        if (i > 0)
            streams_[i].wait(done_[i - 1]); // this item's previous stage, recorded just before
        stages_[i].work(streams_[i], item);
        done_[i].record(streams_[i]);
    }
}

void Pipeline::synchronize() const
{
    for (const Stream& s : streams_)
        s.synchronize();
}

} // namespace cuctx
