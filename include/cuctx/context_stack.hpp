// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::ContextStack: the calling thread's context stack as cuctx knows it.

#include "cuctx/context.hpp"
#include "cuctx/export.hpp"

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuctx {

/// The calling thread's context stack as cuctx knows it: its own entries (switching guards, pushes,
/// an adoption) over what it found current below them, and checks of that record against the driver.
/// Only static functions.
///
/// \par Threading
/// Thread-bound: every function acts on the calling thread's stack alone, so threads may call them at
/// the same time without interfering. What a thread pushed or adopted only that thread can pop or
/// release: pop() and release() on another thread act on that thread's own stack (and refuse with
/// Errc::invalid_state when it has no such entry); a thread's leftover pushes and adoption are released
/// when it exits.
class CUCTX_API ContextStack {
public:
    /// One entry that cuctx put on this thread's stack, bottom first in snapshot(). A value type.
    struct Entry {
        CUcontext handle = nullptr; ///< the driver's handle of the entry's context
        std::uint64_t id = 0;       ///< the context's cuCtxGetId (0 where the driver lacks it)
        int device = -1;            ///< the context's device ordinal
        std::string kind;           ///< "guard", "push" or "adopted"
    };

    /// Pushes `context` (cuCtxPushCurrent) and keeps a handle to it until pop(). A context already on
    /// top is pushed again (the driver's semantics): each push needs its pop. Like a guard, never
    /// throws an error recorded on the context (the context's next fallible call does).
    static void push(const Context& context);
    /// Pops what push() pushed, checking that the driver pops the same context. Errc::invalid_state on
    /// a stack with no cuctx push on top (a guard's or adoption's entry is not pop()'s to remove).
    /// Throws an error recorded on the context (as a fallible call does), after popping.
    static Context pop();

    /// What is current on this thread: cuctx's top entry (no driver call) or, where cuctx has no entry
    /// here, what the driver has current (cuCtxGetCurrent: code outside cuctx may have set it; nullptr
    /// when the driver cannot be loaded).
    static CUcontext current() noexcept;
    /// How many entries cuctx has on this thread's stack (switching guards, pushes, an adoption).
    static std::size_t depth() noexcept;
    /// cuctx's entries, bottom first.
    static std::vector<Entry> snapshot();

    /// Makes `context` this thread's own until release() or thread exit: pushed once, so that every
    /// guard on it afterwards costs no driver call. The way for pool workers to share a context
    /// (docs/contexts.md). Adopting the context already adopted does nothing; adopting another while
    /// one is adopted is Errc::invalid_state (release it first). Like a guard, never throws an error
    /// recorded on the context.
    static void adopt(const Context& context);
    /// Ends the adoption (pops it). Errc::invalid_state if something cuctx pushed later is still on top.
    /// As pop(), throws an error recorded on the context, after popping.
    static void release();
    /// The adopted context, or an empty handle.
    static Context adopted();

    /// What differs between cuctx's record and the driver (cuCtxGetCurrent), if anything. A value type.
    struct Drift {
        CUcontext expected = nullptr; ///< what cuctx believes is current
        CUcontext actual = nullptr;   ///< what the driver says
        std::string description;      ///< both views, for a log
    };
    /// Compares cuctx's record of what is current on this thread with the driver's current context
    /// (cuCtxGetCurrent, 10-15 ns): the difference, or nothing when they agree.
    static std::optional<Drift> drift();
    /// Throws Errc::stack_mismatch, showing both views, when the driver's current context is not the
    /// one cuctx recorded: other code (cuCtxSetCurrent, cudaSetDevice, an unbalanced push) changed it.
    static void verify();
    /// Accepts the driver's current context as the base when cuctx has no entries of its own on this
    /// thread (after deliberate foreign changes). Errc::invalid_state if it has entries.
    static void resync();
};

} // namespace cuctx
