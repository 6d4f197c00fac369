// SPDX-License-Identifier: MIT
#include "cuctx/context_binding.hpp"

#include "context/entries.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/error.hpp"
#include "log/log.hpp"

namespace cuctx {

// NOLINTNEXTLINE(modernize-pass-by-value): the public signature stays; a copy is one atomic increment
ContextBinding::ContextBinding(const Context& context) : context_(context)
{
    // An empty handle equals adopted() on a thread with no adoption: adopt() must refuse it.
    if (context_ && ContextStack::adopted() == context_)
        return; // an enclosing binding or adoption of the same context: nothing to do, nothing to undo
    ContextStack::adopt(context_);
    adoptedHere_ = true;
}

ContextBinding::~ContextBinding()
{
    if (!adoptedHere_)
        return;
    try {
        // Not ContextStack::release(): it would report (and so consume) an error another thread's misuse
        // recorded on the context, which the context's next fallible call reports instead.
        (void)detail::endAdoption("cuctx::ContextBinding");
    } catch (const Error& e) {
        detail::logError("ContextBinding: {}", e.what());
    }
}

} // namespace cuctx
